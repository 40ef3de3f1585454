// Host batch kernels: the emulated device. Each function is the loop a GPU kernel runs one thread
// per element of, over the same pc_bfs.h element functions, on NumPy arrays. The BFS driver in
// perft_core/gpu/ calls these exactly as it launches the CUDA kernels.
#include <pybind11/numpy.h>

#include "host.h"
#include "modules.h"
#include "pc_bfs.h"

using namespace pc_host;

namespace {

template <class T>
T* ptr(py::array& a, size_t need, const char* what) {
    if (!(a.flags() & py::array::c_style)) throw std::invalid_argument(std::string(what) + ": not contiguous");
    if ((size_t)a.nbytes() < need * sizeof(T)) throw std::invalid_argument(std::string(what) + ": array too small");
    return reinterpret_cast<T*>(a.mutable_data());
}

const CastleInfo& castle(const py::bytes& b) {
    const std::string_view v(PyBytes_AS_STRING(b.ptr()), (size_t)PyBytes_GET_SIZE(b.ptr()));
    if (v.size() != sizeof(CastleInfo)) throw std::invalid_argument("castle info: wrong size");
    return *reinterpret_cast<const CastleInfo*>(v.data());
}

template <template <int> class F, class... A>
auto by_side(int us, A&&... a) {
    return us == WHITE ? F<WHITE>::run(a...) : F<BLACK>::run(a...);
}

template <int Us> struct CountF {
    static int run(const Board* b, u64 n, const CastleInfo& ci, u32* counts) {
        for (u64 i = 0; i < n; ++i) counts[i] = bfs_count<Us>(b[i], ci);
        return 0;
    }
};
template <int Us> struct GenF {
    static int run(const Board* b, u64 n, const CastleInfo& ci, const u64* off, Move* moves, u32* parents) {
        for (u64 i = 0; i < n; ++i) {
            int k = generate_moves<Us>(b[i], ci, moves + off[i]);
            for (int j = 0; j < k; ++j) parents[off[i] + j] = (u32)i;
        }
        return 0;
    }
};
template <int Us> struct MakeF {
    static int run(const Board* b, const u32* parents, const Move* moves, u64 n, const CastleInfo& ci, Board* out) {
        for (u64 j = 0; j < n; ++j) bfs_make<Us>(b[parents[j]], moves[j], ci, out[j]);
        return 0;
    }
};
template <int Us> struct LeafF {
    static u64 run(const Board* b, const u32* parents, const Move* moves, u64 n, const CastleInfo& ci, int levels) {
        u64 t = 0;
        for (u64 j = 0; j < n; ++j)
            t += levels == 2 ? bfs_leaf2<Us>(b[parents[j]], moves[j], ci) : bfs_leaf3<Us>(b[parents[j]], moves[j], ci);
        return t;
    }
};

}  // namespace

void register_batch(py::module_& m) {
    static_assert(sizeof(Board) == 40, "Board must be five 64-bit words (the driver's array layout)");

    m.def("gpu_root", [](const py::tuple& args) {
        Root r = parse_args(args);
        u64 words[5] = {r.board.pbq, r.board.nbk, r.board.rqk, r.board.black, r.board.state};
        return py::make_tuple(py::make_tuple(words[0], words[1], words[2], words[3], words[4]), r.us,
                              py::bytes(reinterpret_cast<const char*>(&r.ci), sizeof(CastleInfo)));
    }, "Root of a BFS: ((pbq, nbk, rqk, black, state), side to move 0/1, CastleInfo bytes).");
    m.attr("BOARD_BYTES") = (int)sizeof(Board);
    m.attr("CASTLE_INFO_BYTES") = (int)sizeof(CastleInfo);
    m.attr("MAX_MOVES") = PC_MAX_MOVES;

    m.def("batch_count", [](py::array boards, u64 n, int us, const py::bytes& ci, py::array counts) {
        const Board* b = ptr<Board>(boards, n, "boards");
        u32* c = ptr<u32>(counts, n, "counts");
        const CastleInfo& cinfo = castle(ci);
        py::gil_scoped_release nogil;
        by_side<CountF>(us, b, n, cinfo, c);
    }, "counts[i] = number of legal moves of boards[i] (uint32).");

    m.def("batch_gen", [](py::array boards, u64 n, int us, const py::bytes& ci, py::array offsets, py::array moves,
                          py::array parents) {
        const Board* b = ptr<Board>(boards, n, "boards");
        const u64* off = ptr<u64>(offsets, n + 1, "offsets");
        u64 total = off[n];
        Move* mv = ptr<Move>(moves, total, "moves");
        u32* par = ptr<u32>(parents, total, "parents");
        const CastleInfo& cinfo = castle(ci);
        py::gil_scoped_release nogil;
        by_side<GenF>(us, b, n, cinfo, off, mv, par);
    }, "Write each board's legal moves (uint16) at offsets[i] and i as their parent (uint32).");

    m.def("batch_make", [](py::array boards, py::array parents, py::array moves, u64 n, int us, const py::bytes& ci,
                           py::array children) {
        const Board* b = reinterpret_cast<const Board*>(boards.data());
        const u32* par = ptr<u32>(parents, n, "parents");
        const Move* mv = ptr<Move>(moves, n, "moves");
        Board* out = ptr<Board>(children, n, "children");
        const CastleInfo& cinfo = castle(ci);
        py::gil_scoped_release nogil;
        by_side<MakeF>(us, b, par, mv, n, cinfo, out);
    }, "children[j] = boards[parents[j]] after moves[j].");

    m.def("batch_leaf", [](py::array boards, py::array parents, py::array moves, u64 n, int us, const py::bytes& ci,
                           int levels) {
        if (levels != 2 && levels != 3) throw std::invalid_argument("levels must be 2 or 3");
        const Board* b = reinterpret_cast<const Board*>(boards.data());
        const u32* par = ptr<u32>(parents, n, "parents");
        const Move* mv = ptr<Move>(moves, n, "moves");
        const CastleInfo& cinfo = castle(ci);
        py::gil_scoped_release nogil;
        return by_side<LeafF>(us, b, par, mv, n, cinfo, levels);
    }, "Sum over moves j of perft(levels - 1) below boards[parents[j]] after moves[j].");
}
