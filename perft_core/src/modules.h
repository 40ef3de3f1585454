// Each translation unit of the extension adds its functions to the module here.
#pragma once
#include <pybind11/pybind11.h>

void register_zobrist(pybind11::module_& m);  // src/zobrist.cpp: keys, TT perft, audit
void register_batch(pybind11::module_& m);    // src/batch.cpp: host batch kernels (emulated device)
void register_stats(pybind11::module_& m);    // src/stats.cpp: perft statistics

inline void register_extra(pybind11::module_& m) {
    register_zobrist(m);
    register_batch(m);
    register_stats(m);
}
