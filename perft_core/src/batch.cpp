#include "modules.h"

void register_batch(pybind11::module_& m) {}
