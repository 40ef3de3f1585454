// A standalone driver of the CPU perft recursion (perft_core/src/host.h) for instruction counts and
// A/B timings without Python: `valgrind --tool=callgrind` counts the instructions of `run` alone
// (the table set-up excluded), so small changes to the recursion or the chess core can be compared
// exactly on a machine whose wall-clock timings are disturbed by other users.
//
//   g++ -O3 -march=x86-64-v3 -DPC_HOST_PEXT -std=c++17 -Ikernels -Iperft_core $(python -m pybind11 --includes) \
//       ci/perft_probe.cpp -o /tmp/perft_probe $(python3-config --ldflags --embed)   # host.h includes pybind11
//   /tmp/perft_probe "FEN" DEPTH                # prints: nodes seconds
//   /tmp/perft_probe "FEN" DEPTH MB             # through tables of MB MiB (perft_core/src/tt.h, as
//                                               # zobrist.TranspositionTable(DEPTH, MB) with its defaults;
//                                               # callgrind: --toggle-collect='run_tt(*')
//   valgrind --tool=callgrind --callgrind-out-file=/dev/null --collect-atstart=no --toggle-collect='run(*' \
//       /tmp/perft_probe "FEN" DEPTH            # "Collected" = instructions of the count
//
// FEN: piece placement, side to move, castling in KQkq / Shredder / X-FEN letters, en passant square
// (a tool for known-good positions: the oracle's Position is the project's FEN reader).
// valgrind cannot run AVX-512 code: build with -march=x86-64-v3 (as the extension's _core_v3; without
// -DPC_HOST_PEXT as _core_v3magic), not native.
// Built from the project's own headers (host.h's make_castle_info and perft_any), so it measures
// exactly what the extension runs.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "src/tt.h"

using namespace pc_host;

static Root parse_fen(const char* fen) {
    Root r{};
    const char* f = fen;
    for (int sq = 56; *f && *f != ' '; ++f) {
        if (*f == '/') sq -= 16;
        else if (*f >= '1' && *f <= '8') sq += *f - '0';
        else {
            const char* codes = " pnbrqk";
            const char* p = std::strchr(codes, *f | 32);
            if (!p || *p == ' ') throw std::invalid_argument(std::string("bad piece letter in ") + fen);
            put_piece(r.board, (int)(p - codes), *f >= 'a', sq++);
        }
    }
    if (*f++ != ' ' || (*f != 'w' && *f != 'b')) throw std::invalid_argument("bad side to move");
    r.us = *f == 'w' ? WHITE : BLACK;
    f += 2;
    int rooks[4] = {-1, -1, -1, -1};
    for (; *f && *f != ' '; ++f) {
        if (*f == '-') continue;
        const int color = *f >= 'a' ? BLACK : WHITE, back = color == WHITE ? 0 : 56;
        const int k = king_square(r.board, color) & 7;
        const char c = (char)(*f | 32);
        int file = c == 'k' ? 7 : c == 'q' ? 0 : c - 'a';
        if (c == 'k' || c == 'q') {  // the outermost rook on that side (X-FEN)
            for (int x = c == 'k' ? 7 : 0; x != k; x += c == 'k' ? -1 : 1)
                if (piece_code(r.board, back + x) == ROOK && ((r.board.black >> (back + x)) & 1) == (u64)color) {
                    file = x;
                    break;
                }
        } else {
            r.chess960 = true;
        }
        rooks[color * 2 + (file > k ? 0 : 1)] = back + file;
    }
    u8 rights;
    r.ci = make_castle_info(r.board, rooks, rights);
    int epf = 0;
    if (*f == ' ' && f[1] >= 'a' && f[1] <= 'h') epf = f[1] - 'a' + 1;
    r.board.state = (u8)(rights | (epf << 4));
    return r;
}

__attribute__((noinline)) u64 run(const Root& r, int depth) { return perft_any(r.board, r.ci, r.us, depth); }

__attribute__((noinline)) u64 run_tt(const Root& r, int depth, pc_tt::Table& t) {
    pc_tt::Search s(t, r.ci);
    return (u64)pc_tt::tt_any<pc_tt::FAULT_NONE>(r.board, pc_tt::root_key(r.board, r.us, r.ci, t.keys()), r.us, depth, s);
}

int main(int argc, char** argv) {
    if (argc != 3 && argc != 4) {
        std::fprintf(stderr, "usage: %s FEN DEPTH [TABLE_MIB]\n", argv[0]);
        return 2;
    }
    pc_init::init_tables();
    try {
        const Root r = parse_fen(argv[1]);
        const int depth = std::atoi(argv[2]);
        std::unique_ptr<pc_tt::Table> table;  // made before the clock starts (bench_cpu.py also times its making)
        if (argc == 4)
            table.reset(new pc_tt::Table(depth, (u64)(std::atof(argv[3]) * (1 << 20)), PC_ZOBRIST_DEFAULT_SEED, 2,
                                         std::max(depth - 3, 0), false));
        const auto t = std::chrono::steady_clock::now();
        const u64 n = table ? run_tt(r, depth, *table) : run(r, depth);
        std::printf("%llu %.3f\n", n, std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 2;
    }
    return 0;
}
