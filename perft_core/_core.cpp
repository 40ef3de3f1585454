// perft_core._core: the CPU backend ("template CPU path").
//
// Compiles the chess core in kernels/ with the host compiler. The perft recursion is templated on
// the side to move and bulk-counts the last ply (count_moves instead of make + count). Threads
// take subtrees of balanced size (split_divide in src/host.h) from a shared counter.
#include <csignal>

#include "src/host.h"
#include "src/modules.h"

using namespace pc_host;

extern "C" void pc_stop_handler(int sig) { g_stop.store(sig, std::memory_order_relaxed); }

// The stop request of one count (see stop_requested in src/host.h): its deadline (max_seconds > 0)
// and, for a count that can be long (depth >= 5) made from Python's main thread, SIGINT and SIGTERM
// handlers that ask it to stop. Python's own handlers would run only once the call returned;
// finish() puts them back and hands them the signal, so Ctrl-C still raises KeyboardInterrupt and
// SIGTERM still does what it did, within a few milliseconds instead of at the end of the count.
class StopScope {
  public:
    StopScope(int depth, double max_seconds) {
        t_deadline_ns = max_seconds > 0 ? steady_ns() + (std::int64_t)(max_seconds * 1e9) : 0;
        if (depth < 5 || !main_thread()) return;
        g_stop.store(0);
        t_stop = &g_stop;
        struct sigaction sa {};
        sa.sa_handler = pc_stop_handler;
        sigemptyset(&sa.sa_mask);
        for (int i = 0; i < 2; ++i) {
            sigaction(kSignals[i], nullptr, &old_[i]);
            if (old_[i].sa_handler == SIG_IGN) continue;  // an ignored signal stays ignored
            sigaction(kSignals[i], &sa, nullptr);
            installed_[i] = true;
        }
    }
    StopScope(const StopScope&) = delete;
    StopScope& operator=(const StopScope&) = delete;
    ~StopScope() { restore(); }

    // With the GIL held, after the count: nothing if it ran to the end; else the signal goes to
    // Python's handler (KeyboardInterrupt for Ctrl-C) or, at a deadline, CountStopped(message,
    // [(uci, nodes)] of the root moves counted in full) is raised.
    void finish(py::list partial = py::list()) {
        if (!stop_requested()) return;
        const int sig = g_stop.exchange(0);
        restore();
        if (sig > 0) {
            std::raise(sig);
            if (PyErr_CheckSignals() != 0) throw py::error_already_set();
        }
        PyErr_SetObject(stopped_type().ptr(),
                        py::make_tuple(sig > 0 ? "stopped by a signal" : "stopped at its deadline", partial).ptr());
        throw py::error_already_set();
    }

    static py::object& stopped_type() {
        static py::object t;
        return t;
    }

  private:
    static constexpr int kSignals[2] = {SIGINT, SIGTERM};
    struct sigaction old_[2] {};
    bool installed_[2] = {false, false};

    static bool main_thread() {
        py::module_ threading = py::module_::import("threading");
        py::object main = threading.attr("main_thread")().attr("ident"), me = threading.attr("get_ident")();
        return main.equal(me);
    }

    void restore() {
        for (int i = 0; i < 2; ++i)
            if (installed_[i]) sigaction(kSignals[i], &old_[i], nullptr);
        installed_[0] = installed_[1] = false;
        t_deadline_ns = 0;
        t_stop = nullptr;
    }
};


#ifndef PC_MODULE_NAME
#define PC_MODULE_NAME _core_base
#endif

// Built once per instruction set (setup.py: _core_base, _core_v3); perft_core/_core.py picks one.
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
