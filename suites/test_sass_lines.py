"""ci/sass_lines.py: ncu's per-instruction counts joined with nvdisasm's inline chains, on captured text."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ci"))

import sass_lines  # noqa: E402

# Two functions; the second has an instruction inlined from count_moves (pc_movegen.h:197) into a
# generate_legal line (pc_movegen.h:101), and one from pc_board.h with no pc_movegen frame.
SASS = """\
//--------------------- .text._Z11leaf_kernelILi0ELi3EEvPK5Board --------------------------
\t//## File "/x/kernels/pc_kernels.cu", line 10
        /*0000*/                   MOV R1, R2 ;
//--------------------- .text._Z11leaf_kernelILi1ELi3EEvPK5Board --------------------------
\t//## File "/x/kernels/pc_kernels.cu", line 20
        /*0000*/                   LDC R1, c[0x0][0x28] ;
\t//## File "/x/kernels/pc_common.h", line 41 inlined at "/x/kernels/pc_movegen.h", line 101
\t//## File "/x/kernels/pc_movegen.h", line 101 inlined at "/x/kernels/pc_movegen.h", line 197
\t//## File "/x/kernels/pc_movegen.h", line 197 inlined at "/x/kernels/pc_bfs.h", line 89
        /*0010*/                   FLO.U32.SH R3, R4 ;
        /*0020*/                   BREV R4, R5 ;
\t//## File "/x/kernels/pc_board.h", line 73 inlined at "/x/kernels/pc_bfs.h", line 88
        /*0030*/                   LOP3.LUT R6, R7, R8, RZ, 0xc0, !PT ;
"""
CSV = """\
"Kernel Name","void leaf_kernel<(int)1, (int)3>(const Board *, const unsigned int *)"
"Address","Source","Warp Stall Sampling (All Samples)","# Samples","Instructions Executed","Thread Instructions Executed"
"0x7f0000001000","LDC R1, c[0x0][0x28]","2","2","10","320"
"0x7f0000001010","FLO.U32.SH R3, R4","6","6","100","1600"
"0x7f0000001020","BREV R4, R5","0","0","100","1600"
"0x7f0000001030","LOP3.LUT R6, R7, R8, RZ, 0xc0, !PT","2","2","40","1280"
"""


def test_kernel_name_to_its_mangled_section():
    kernel, counts = sass_lines.read_counts(CSV.splitlines())
    assert sass_lines.mangled_fragment(kernel) == "leaf_kernelILi1ELi3E"
    assert sass_lines.mangled_fragment("upsweep_kernel(const unsigned int *)") == "upsweep_kernel"
    assert counts == [(0, 10, 320, 2), (0x10, 100, 1600, 6), (0x20, 100, 1600, 0), (0x30, 40, 1280, 2)]


def test_counts_go_to_the_innermost_line_or_to_the_frame_a_line_calls():
    _kernel, counts = sass_lines.read_counts(CSV.splitlines())
    sass = sass_lines.parse_sass(SASS.splitlines(), "leaf_kernelILi1ELi3E")
    assert sass[0x10][0][:2] == (("pc_common.h", 41), ("pc_movegen.h", 101))
    assert sass[0x20][0] == sass[0x10][0]  # no new chain: the previous one holds
    inner = sass_lines.per_line(sass, counts)
    assert inner[("pc_common.h", 41)] == [200, 3200, 6]
    assert inner[("pc_board.h", 73)] == [40, 1280, 2]
    grouped = sass_lines.per_line(sass, counts, ("pc_movegen.h", 197))
    assert grouped[("pc_movegen.h", 101)] == [200, 3200, 6]
    assert ("pc_common.h", 41) not in grouped
    assert grouped[("pc_board.h", 73)] == [40, 1280, 2]  # not under the frame: its innermost line


def test_the_other_side_instantiation_is_not_read_and_a_missing_function_is_an_error():
    sass = sass_lines.parse_sass(SASS.splitlines(), "leaf_kernelILi0ELi3E")
    assert list(sass) == [0]
    with pytest.raises(ValueError, match="leaf_kernelILi0ELi4E"):
        sass_lines.parse_sass(SASS.splitlines(), "leaf_kernelILi0ELi4E")


def test_cli_prints_shares_and_lanes(tmp_path, capsys):
    (tmp_path / "a.csv").write_text(CSV)
    (tmp_path / "a.sass").write_text(SASS)
    assert sass_lines.main([str(tmp_path / "a.csv"), str(tmp_path / "a.sass"), "--frame", "pc_movegen.h:197"]) == 0
    out = capsys.readouterr().out
    assert "250 warp instructions, 19.2 active lanes" in out
    assert "pc_movegen.h:101                   80.0%   16.0   60.0%" in out
