#include "modules.h"

void register_zobrist(pybind11::module_& m) {}
