// The chess core shared by the CPU extension and the GPU kernels.
#pragma once
#include "pc_common.h"
#include "pc_tables.h"
#include "pc_board.h"
#include "pc_movegen.h"
