// Zobrist keys, transposition-table perft and the table audit, for perft_core._core.
//
// Keys cross into Python as (lo, hi) halves or as one int (hi << 64) | lo; counts as Python ints
// of any size (the TT perft accumulates in 128 bits).
#include "modules.h"
#include "stop.h"
#include "tt.h"

using namespace pc_host;
using pc_tt::Table;
using pc_tt::u128;

namespace {

py::object pyint_u128(u128 v) {
    const u64 hi = (u64)(v >> 64), lo = (u64)v;
    if (hi == 0) return py::int_(lo);
    py::int_ h(hi), l(lo), shift(64);
    py::object s = py::reinterpret_steal<py::object>(PyNumber_Lshift(h.ptr(), shift.ptr()));
    if (!s) throw py::error_already_set();
    py::object r = py::reinterpret_steal<py::object>(PyNumber_Or(s.ptr(), l.ptr()));
    if (!r) throw py::error_already_set();
    return r;
}

// The message of a count through the tables that passes 2^128 - 1 (its sums saturate, src/tt.h).
const char* const COUNT_PAST_U128 =
    "the count passes 2^128 - 1 (340,282,366,920,938,463,463,374,607,431,768,211,455): the cpu backend counts "
    "in 128 bits and refuses it rather than return it wrapped";

py::object pykey(const Key128& k) { return pyint_u128(((u128)k.hi << 64) | k.lo); }

ZobristKeys keys_for(u64 seed) {
    ZobristKeys z;
    zobrist_init(z, seed);
    return z;
}

std::vector<u128> tt_counts(const Root& r, const std::vector<Move>& moves, int depth, int threads, Table& t,
                            int fault) {
    py::gil_scoped_release nogil;
    return pc_tt::divide_tt(r, moves, depth, threads, t, fault);
}

}  // namespace

void register_zobrist(pybind11::module_& m) {
    m.attr("ZOBRIST_DEFAULT_SEED") = py::int_((u64)PC_ZOBRIST_DEFAULT_SEED);

    m.def("zobrist_key", [](const py::tuple& args, u64 seed) {
        Root r = parse_args(args);
        ZobristKeys z = keys_for(seed);
        return pykey(pc_tt::root_key(r.board, r.us, r.ci, z));
    }, py::arg("args"), py::arg("seed"), "128-bit key (hi << 64 | lo) of position B, from scratch.");

    m.def("zobrist_path", [](const py::tuple& args, const std::vector<std::string>& moves, u64 seed) {
        Root r = parse_args(args);
        ZobristKeys z = keys_for(seed);
        Key128 k = pc_tt::root_key(r.board, r.us, r.ci, z);
        py::list out;
        out.append(pykey(k));
        for (size_t i = 0; i < moves.size(); ++i) {
            bool found = false;
            for (Move mv : legal_list(r)) {
                if (uci(r, mv) != moves[i]) continue;
                k = pc_tt::play_key(r.board, r.us, mv, k, r.ci, z);
                Board c;
                play(r.board, r.ci, r.us, mv, c);
                r.board = c;
                r.us ^= 1;
                found = true;
                break;
            }
            if (!found) throw std::invalid_argument("move " + std::to_string(i) + " is illegal: " + moves[i]);
            out.append(pykey(k));
        }
        return out;
    }, py::arg("args"), py::arg("moves"), py::arg("seed"),
       "Keys along a UCI move sequence from B: [from-scratch key of B, then the incremental key after each move].");

    m.def("zobrist_keys_blob", [](u64 seed) {
        ZobristKeys z = keys_for(seed);
        return py::bytes(reinterpret_cast<const char*>(&z), sizeof z);
    }, py::arg("seed"), "The ZobristKeys struct of a seed as raw bytes (for upload to the device).");

    pc_tt::bind_tables<Table>(m, "TTable", "Transposition tables, one per remaining depth (see src/tt.h).")
        .def("entries", [](const Table& t) {
            py::list out;
            t.for_each([&](int d, int kind, u64 bucket, const Key128& k, bool known, u128 count, const pc_tt::Rec& rec) {
                out.append(py::make_tuple(d, pc_tt::kind_name(kind), bucket, k.lo, k.hi, known, pyint_u128(count),
                                          rec.valid ? py::object(pc_tt::rec_args(rec)) : py::object(py::none())));
            });
            return out;
        }, "Every stored entry: (depth, kind, bucket, key_lo, key_hi, key_lo_is_full, count, core args or None).")
        .def("lookup", [](Table& t, u64 lo, u64 hi, int depth) -> py::object {
            if (t.kind(depth) == pc_tt::LEVEL_NONE) return py::none();
            pc_tt::LevelStats scratch;
            u128 c = 0;
            if (!t.probe(depth, Key128{lo, hi}, c, scratch)) return py::none();
            return pyint_u128(c);
        }, py::arg("key_lo"), py::arg("key_hi"), py::arg("depth"), "The stored count of a key at a depth, or None.");

    // Both stop as perft and divide do (stop.h): Ctrl-C within milliseconds, CountStopped at a
    // deadline; a count cut short stores nothing (tt.h), so the tables stay exact.
    m.def("perft_tt", [](const py::tuple& args, int depth, int threads, Table& table, int fault, double max_seconds) {
        check_depth(depth);
        check_threads(threads);
        Root r = parse_args(args);
        if (depth == 0) return py::object(py::int_(1));
        StopScope stop(depth, max_seconds);
        u128 total = 0;
        for (u128 c : tt_counts(r, legal_list(r), depth, threads, table, fault)) total = pc_tt::add_sat(total, c);
        stop.finish();
        if (total == pc_tt::U128_SAT) throw std::overflow_error(COUNT_PAST_U128);
        return pyint_u128(total);
    }, py::arg("args"), py::arg("depth"), py::arg("threads"), py::arg("table"), py::arg("fault") = 0,
       py::arg("max_seconds") = 0.0,
       "Perft of B through the tables (128-bit count). fault != 0 plants a test-only key bug; max_seconds > 0: "
       "raise CountStopped after that many seconds.");

    m.def("divide_tt", [](const py::tuple& args, int depth, int threads, Table& table, int fault, double max_seconds) {
        check_depth(depth);
        check_threads(threads);
        Root r = parse_args(args);
        std::vector<Move> moves = depth > 0 ? legal_list(r) : std::vector<Move>{};
        StopScope stop(depth, max_seconds);
        std::vector<u128> counts = tt_counts(r, moves, depth, threads, table, fault);
        stop.finish();
        for (u128 c : counts)
            if (c == pc_tt::U128_SAT) throw std::overflow_error(COUNT_PAST_U128);
        py::list out;
        for (size_t i = 0; i < moves.size(); ++i) out.append(py::make_tuple(uci(r, moves[i]), pyint_u128(counts[i])));
        return out;
    }, py::arg("args"), py::arg("depth"), py::arg("threads"), py::arg("table"), py::arg("fault") = 0,
       py::arg("max_seconds") = 0.0, "[(uci, nodes)] through the tables.");
}
