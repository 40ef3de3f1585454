// perft_core._core: the CPU backend ("template CPU path").
//
// Compiles the chess core in kernels/ with the host compiler. The perft recursion is templated on
// the side to move and bulk-counts the last ply (count_moves instead of make + count). Threads
// take subtrees of balanced size (split_divide in src/host.h) from a shared counter.
#include "src/host.h"
#include "src/modules.h"
#include "src/stop.h"

using namespace pc_host;

#ifndef PC_MODULE_NAME
#define PC_MODULE_NAME _core_base
#endif

// Built once per instruction set (setup.py: _core_base, _core_v3, _core_v3magic); perft_core/_core.py picks one.
PYBIND11_MODULE(PC_MODULE_NAME, m) {
    m.doc() = "perft CPU backend: the kernels/ chess core compiled for the host";
    pc_init::init_tables();
    register_extra(m);
    StopScope::stopped_type() = py::reinterpret_steal<py::object>(
        PyErr_NewException("perft_core._core.CountStopped", PyExc_RuntimeError, nullptr));
    m.attr("CountStopped") = StopScope::stopped_type();
    m.attr("MAX_DEPTH") = MAX_DEPTH;
    m.attr("MAX_THREADS") = MAX_THREADS;

    m.def("legal_moves", [](const py::tuple& args) {
        Root r = parse_args(args);
        std::vector<std::string> out;
        for (Move mv : legal_list(r)) out.push_back(uci(r, mv));
        return out;
    }, "Legal moves of the position in core args B, as UCI strings.");

    m.def("make_move", [](const py::tuple& args, const std::string& text) {
        Root r = parse_args(args);
        for (Move mv : legal_list(r)) {
            if (uci(r, mv) != text) continue;
            Board c;
            play(r.board, r.ci, r.us, mv, c);
            int pc = piece_code(r.board, mv_from(mv));
            bool resets = mv_flag(mv) != MF_CASTLE && (pc == PAWN || (occupied(r.board) & bit(mv_to(mv))));
            int rooks[4];
            for (int color = 0; color < 2; ++color)
                for (int side = 0; side < 2; ++side)
                    rooks[color * 2 + side] = (c.state & castle_bit(color, side)) ? r.ci.side[color][side].rook : -1;
            int epf = ep_file(c);
            int ep = epf < 0 ? -1 : (r.us == WHITE ? 16 : 40) + epf;
            return py::make_tuple(c.pbq, c.nbk, c.rqk, c.black,
                                  py::make_tuple(rooks[0], rooks[1], rooks[2], rooks[3]), ep, resets);
        }
        throw std::invalid_argument("illegal move: " + text);
    }, "Play a legal UCI move; returns (pbq, nbk, rqk, black, castle_rooks, ep_square, resets_halfmove).");

    m.def("attacked", [](const py::tuple& args, int square, bool by_white) {
        Root r = parse_args(args);
        if (square < 0 || square > 63) throw std::invalid_argument("square out of range");
        return attacked_by(r.board, square, by_white ? WHITE : BLACK, occupied(r.board));
    }, "Is `square` attacked by the given side in position B?");

    m.def("perft", [](const py::tuple& args, int depth, int threads, double max_seconds) {
        check_depth(depth);
        check_threads(threads);
        Root r = parse_args(args);
        if (depth == 0) return (u64)1;
        StopScope stop(depth, max_seconds);
        u64 total = 0;
        {
            py::gil_scoped_release nogil;
            if (threads <= 1 || depth < 3) total = perft_any(r.board, r.ci, r.us, depth);
            else for (u64 c : divide_counts(r, legal_list(r), depth, threads)) total += c;
        }
        stop.finish();
        return total;
    }, py::arg("args"), py::arg("depth"), py::arg("threads") = 1, py::arg("max_seconds") = 0.0,
       "Perft count (nodes) of B at depth. max_seconds > 0: raise CountStopped after that many seconds; "
       "Ctrl-C raises KeyboardInterrupt within milliseconds.");

    m.def("divide", [](const py::tuple& args, int depth, int threads, double max_seconds) {
        check_depth(depth);
        check_threads(threads);
        Root r = parse_args(args);
        std::vector<Move> moves = depth > 0 ? legal_list(r) : std::vector<Move>{};
        StopScope stop(depth, max_seconds);
        std::vector<u64> counts;
        std::vector<bool> done;
        {
            py::gil_scoped_release nogil;
            counts = divide_counts(r, moves, depth, threads, &done);
        }
        py::list out;
        for (size_t i = 0; i < moves.size(); ++i)
            if (done.empty() || done[i]) out.append(py::make_tuple(uci(r, moves[i]), counts[i]));
        stop.finish(out);
        return out;
    }, py::arg("args"), py::arg("depth"), py::arg("threads") = 1, py::arg("max_seconds") = 0.0,
       "[(uci, nodes)] for each root move. max_seconds > 0: raise CountStopped(message, [(uci, nodes)] of "
       "the moves counted in full) after that many seconds.");

    m.def("split_counts", [](const py::tuple& args, int depth, int threads) {
        check_depth(depth);
        Root r = parse_args(args);
        std::vector<Move> moves = depth > 0 ? legal_list(r) : std::vector<Move>{};
        struct Item { Board b; int root; int us; int depth; };
        std::vector<Item> items;
        std::vector<std::tuple<std::string, int, u64>> out;
        py::gil_scoped_release nogil;
        split_divide(r, Item{r.board, -1, r.us, depth}, moves, depth, threads, items,
                     [](const Item& p, Move, const Board& c, int root) { return Item{c, root, p.us ^ 1, 0}; });
        for (const Item& it : items) out.emplace_back(uci(r, moves[it.root]), it.depth, perft_any(it.b, r.ci, it.us, it.depth));
        return out;
    }, py::arg("args"), py::arg("depth"), py::arg("threads"),
       "The work items a threaded perft of B hands to `threads` workers, in the order they are taken: "
       "[(root move UCI, plies left, nodes)] (tests of the split's balance).");

    m.def("tables_blob", []() {
        return py::bytes(reinterpret_cast<const char*>(&g_tables_host), sizeof(Tables));
    }, "The attack tables as raw bytes (the GPU backend uploads them to g_tables_dev).");
}
