"""Users' own tables: ``perft suite FILE.epd`` (EPD perft format) and ``FILE.csv`` (fen,depth,nodes).

Expected counts are python-chess's; a file with a wrong count fails, bad files exit 2 naming the
file and line.
"""
from __future__ import annotations

import json

import pytest

from oracle import cli, tables
from oracle.engines import PythonChessEngine

KIWIPETE = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq -"
CPW3 = "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"
XFEN = "r1k1r2q/p1ppp1pp/8/8/8/8/P1PPP1PP/R1K1R2Q w KQkq -"


def counts(fen: str, depths) -> list[int]:
    return [PythonChessEngine().perft(fen, d) for d in depths]


@pytest.fixture
def epd(tmp_path):
    lines = ["# my engine's test positions", ""]
    for fen in (KIWIPETE, CPW3, XFEN):
        lines.append(fen + " " + " ".join(f";D{d} {n}" for d, n in zip((1, 2, 3), counts(fen, (1, 2, 3)))))
    path = tmp_path / "mine.epd"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_epd_file_rows(epd):
    rows = tables.load_file(str(epd))
    assert [(r.id, r.depth) for r in rows][:3] == [("line3", 1), ("line3", 2), ("line3", 3)]
    assert len(rows) == 9 and all(r.suite == str(epd) for r in rows)
    assert [r.chess960 for r in rows if r.depth == 1] == [False, False, True]
    assert rows[2].nodes == 97862  # Kiwipete depth 3, as published


def test_perft_suite_runs_an_epd_and_a_csv_file(epd, tmp_path, capsys):
    assert cli.main(["suite", str(epd), "--engine", "cpu", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["suites"] == [str(epd)] and [r["status"] for r in data["rows"]] == ["pass"] * 9
    csv_path = tmp_path / "mine.csv"
    csv_path.write_text("fen,depth,nodes\n" + "".join(f'"{CPW3}",{d},{n}\n' for d, n in zip((2, 4), counts(CPW3, (2, 4)))))
    assert cli.main(["suite", str(csv_path), "cpw", "--engine", "cpu", "--max-nodes", "1000"]) == 0
    out = capsys.readouterr().out
    assert str(csv_path) in out and "cpw" in out


def test_a_wrong_count_in_the_file_fails(epd, capsys):
    text = epd.read_text().replace(";D2 2039", ";D2 2040")
    epd.write_text(text)
    assert cli.main(["suite", str(epd), "--engine", "cpu"]) == 1
    assert "expected 2,040, got 2,039" in capsys.readouterr().out


@pytest.mark.parametrize("name, text, message", [
    ("a.epd", f"{CPW3}\n", "a.epd:1: no 'D<depth> <nodes>' operation"),
    ("a.epd", f"{CPW3} ;D1 14\n{CPW3} ;D2 x\n", "a.epd:2: EPD operation D2: expected a node count (digits only), got 'x'"),
    ("a.epd", f"{CPW3} ;D1 14\n{CPW3} ;D2 2.5\n", "a.epd:2: EPD operation D2: expected a node count"),
    ("a.epd", f"{CPW3} ;depth 1 14\n", "a.epd:1: EPD operations 'depth 1 14'"),
    ("a.epd", "8/8/8/8 w - - ;D1 3\n", "a.epd:1: board: expected 8 ranks"),  # worded as perft run's
    ("a.epd", "# nothing\n", "a.epd: no perft row"),
    ("a.csv", "fen,nodes\nx,1\n", "a.csv:1: the header must name fen, depth and nodes; missing depth"),
    ("a.csv", f'fen,depth,nodes\n"{CPW3}",1,14\n"{CPW3}",-2,191\n', "a.csv:3: the depth must be"),
    ("a.csv", f'fen,depth,nodes\n"{CPW3}",1\n', "a.csv:2: too few fields"),
    # a table that contradicts itself names both counts (python-chess's EPD reader keeps the last)
    ("a.epd", f"{CPW3} ;D1 14 ;D1 15\n", "a.epd:1: EPD operation D1 given twice, 14 and 15"),
    # D01 is depth 1 too (python-chess reads both): it was let through, and the last count taken
    ("a.epd", f"{CPW3} ;D1 15 ;D01 14\n", "a.epd:1: EPD operation D01 given twice, 15 and 14 (as D1 and D01)"),
    ("a.epd", f"{CPW3} ;D1 1_4\n", "a.epd:1: EPD operation D1: expected a node count (digits only), got '1_4'"),
    ("a.epd", f"{CPW3} ;D1 +14\n", "a.epd:1: EPD operation D1: expected a node count (digits only), got '+14'"),
    ("a.csv", f'fen,depth,nodes\n"{CPW3}",1,14\n"{CPW3[:-3]} 7 9",1,15\n',
     "a.csv:3: perft 1 of '8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - -' is 15 here and 14 on line 2"),
    ("a.csv", f'id,fen,depth,nodes\nx,"{CPW3}",1,14\nx,"{KIWIPETE}",1,48\n',
     "a.csv:3: id 'x' at depth 1 names another position than on line 2"),
])
def test_bad_files_exit_2_naming_file_and_line(tmp_path, capsys, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    assert cli.main(["suite", str(path), "--engine", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("perft: error: ") and err.count("\n") == 1 and str(tmp_path / message) in err


def test_missing_file_and_unknown_suite(tmp_path, capsys):
    assert cli.main(["suite", str(tmp_path / "none.epd"), "--engine", "cpu"]) == 2
    assert "none.epd: cannot read it" in capsys.readouterr().err
    assert cli.main(["suite", "nosuch", "--engine", "cpu"]) == 2
    assert "unknown suite 'nosuch'" in capsys.readouterr().err


def test_a_count_given_twice_alike_is_one_row(tmp_path):
    """The same count written twice (EPD operations, or a position's move counters aside) is no
    contradiction: the EPD record keeps one count a depth."""
    path = tmp_path / "same.epd"
    path.write_text(f"{CPW3} ;D1 14 ;D1\t14 ;id \"a;D1 99\"\n")  # a tab separates an operand too
    assert [(r.depth, r.nodes) for r in tables.load_file(str(path))] == [(1, 14)]


def test_lines_of_a_csv_refuse_a_depth_given_two_counts():
    """`perft run -` and other line readers (perft_core.positions.read_csv): one position's rows
    giving a depth two counts are refused with the line, not the last one kept."""
    from perft_core.positions import read_lines

    rows = ["fen,depth,nodes", f"{CPW3},1,14", f"{CPW3},1,15"]
    with pytest.raises(ValueError, match="t.csv:3: depth 1 of this position given twice, 14 and 15"):
        list(read_lines(rows, "t.csv"))
    assert [e.counts for e in read_lines(rows[:2] + [f"{CPW3},1,14"], "t.csv")] == [{1: 14}]


@pytest.mark.parametrize("line, error", [
    (f"{CPW3[:-2]}", "fields: expected 6 fields (or 4 as in EPD), got 5"),
    (f"{CPW3} 2", "EPD operation '2': an opcode starts with a letter"),
    (f"{CPW3} 2 ;D1 14", "EPD operation '2': an opcode starts with a letter")])
def test_a_fen_of_five_or_seven_fields_is_refused_not_read_as_operations(line, error):
    """A FEN with a move counter missing or one too many: python-chess's EPD reader takes the extra
    number for an opcode, so the halfmove counter was dropped and the line counted; refused, as
    `perft run POSITION` refuses it (five fields: in the FEN's words, as there)."""
    import re

    from perft_core.positions import read_lines

    with pytest.raises(ValueError, match=f"l.epd:1: {re.escape(error)}"):
        list(read_lines([line], "l.epd"))

