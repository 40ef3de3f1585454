// Host batch kernels: the emulated device. Each function is the loop a GPU kernel runs one thread
// per element of, over the same pc_bfs.h element functions, on NumPy arrays. The BFS driver in
// perft_core/gpu/ calls these exactly as it launches the CUDA kernels.
#include <pybind11/numpy.h>

#include "host.h"
#include "modules.h"
#include "pc_bfs.h"
#include "pc_stats.h"
#include "pc_tt_stats.h"

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
// Generation writes into the slots that counting reserved: a board whose generator gives another
// number of moves than its count promised (a move generator bug) must not write over its
// neighbours' moves or past the array, so each board writes at most its own slots (CappedSink) and
// the number it generated is checked.
template <int Us> struct GenF {
    static int run(const Board* b, u64 n, const CastleInfo& ci, const u64* off, Move* moves, u32* parents) {
        for (u64 i = 0; i < n; ++i) {
            const u64 reserved = off[i + 1] - off[i];
            if (reserved == 0) continue;  // no moves, or a TT hit (TT mode)
            CappedSink s(moves + off[i], (int)reserved);
            generate_legal<Us>(b[i], ci, s);
            if ((u64)s.n != reserved)
                throw std::runtime_error("batch_gen: board " + std::to_string(i) + " generates " + std::to_string(s.n) +
                                         " moves where its count promised " + std::to_string(reserved) +
                                         " (generate_moves and count_moves disagree)");
            for (u64 j = 0; j < reserved; ++j) parents[off[i] + j] = (u32)i;
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

template <int Us> struct KeysF {
    static int run(const Board* b, u64 n, const CastleInfo& ci, const ZobristKeys& z, Key128* keys) {
        for (u64 i = 0; i < n; ++i) keys[i] = compute_hash<Us>(b[i], ci, z);
        return 0;
    }
};
template <int Us> struct CountProbeF {
    static int run(const Board* b, const Key128* keys, u64 n, const CastleInfo& ci, const TTEntry16* tt, u64 slots,
                   u32* counts, u64* values) {
        for (u64 i = 0; i < n; ++i) counts[i] = bfs_count_probe<Us>(b[i], keys[i], tt, slots, ci, values[i]);
        return 0;
    }
};
template <int Us> struct MakeKeyF {
    static int run(const Board* b, const Key128* keys, const u32* par, const Move* mv, u64 n, const CastleInfo& ci,
                   const ZobristKeys& z, Board* out, Key128* out_keys) {
        for (u64 j = 0; j < n; ++j) bfs_make_key<Us>(b[par[j]], keys[par[j]], mv[j], ci, z, out[j], out_keys[j]);
        return 0;
    }
};
template <int Us> struct LeafValuesF {
    static int run(const Board* b, const u32* par, const Move* mv, u64 n, const CastleInfo& ci, int levels,
                   u64* values) {
        for (u64 j = 0; j < n; ++j)
            values[par[j]] += levels == 2 ? bfs_leaf2<Us>(b[par[j]], mv[j], ci) : bfs_leaf3<Us>(b[par[j]], mv[j], ci);
        return 0;
    }
};

// The statistics leaf (kernels/pc_stats.h): each move's leaf parent classified, or each board's moves.
template <int Us> struct StatsLeafF {
    static StatCounts run(const Board* b, const u32* par, const Move* mv, u64 n, const CastleInfo& ci) {
        StatCounts s;
        stats_zero(s);
        for (u64 j = 0; j < n; ++j) bfs_stats_leaf<Us>(b[par[j]], mv[j], ci, s);
        return s;
    }
};
template <int Us> struct StatsSumF {
    static StatCounts run(const Board* b, u64 n, const CastleInfo& ci) {
        StatCounts s;
        stats_zero(s);
        for (u64 i = 0; i < n; ++i) leaf_stats<Us>(b[i], ci, s);
        return s;
    }
};

// Statistics with tables: each board's (or each move's leaf parent's) counters into the level's 13
// value slices (values[c * n_boards + board]), as stats_values_kernel / stats_leaf_values_kernel.
template <int Us> struct StatsValuesF {
    static int run(const Board* b, u64 n, const CastleInfo& ci, u64* values) {
        for (u64 i = 0; i < n; ++i) {
            StatCounts s;
            stats_zero(s);
            leaf_stats<Us>(b[i], ci, s);
            u64 w[STATS_WORDS];
            stats_words(s, w);
            for (int c = 0; c < STATS_WORDS; ++c) values[(u64)c * n + i] = w[c];
        }
        return 0;
    }
};
template <int Us> struct StatsLeafValuesF {
    static int run(const Board* b, const u32* par, const Move* mv, u64 n, const CastleInfo& ci, u64* values,
                   u64 n_boards) {
        for (u64 j = 0; j < n; ++j) {
            StatCounts s;
            stats_zero(s);
            bfs_stats_leaf<Us>(b[par[j]], mv[j], ci, s);
            u64 w[STATS_WORDS];
            stats_words(s, w);
            for (int c = 0; c < STATS_WORDS; ++c) values[(u64)c * n_boards + par[j]] += w[c];
        }
        return 0;
    }
};

// The 13 counters as a tuple of ints, perft_core.stats.STATS_FIELDS order.
py::tuple stats_tuple(const StatCounts& s) {
    u64 w[STATS_WORDS];
    stats_words(s, w);
    py::tuple t((size_t)STATS_WORDS);
    for (int k = 0; k < STATS_WORDS; ++k) t[k] = py::int_(w[k]);
    return t;
}

const ZobristKeys& zkeys(py::array& z) { return *ptr<ZobristKeys>(z, 1, "zobrist keys"); }

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

    m.def("batch_stats_leaf", [](py::array boards, py::array parents, py::array moves, u64 n, int us,
                                 const py::bytes& ci) {
        const Board* b = reinterpret_cast<const Board*>(boards.data());
        const u32* par = ptr<u32>(parents, n, "parents");
        const Move* mv = ptr<Move>(moves, n, "moves");
        const CastleInfo& cinfo = castle(ci);
        StatCounts s;
        {
            py::gil_scoped_release nogil;
            s = by_side<StatsLeafF>(us, b, par, mv, n, cinfo);
        }
        return stats_tuple(s);
    }, "Statistics (a 13-tuple, perft_core.stats.STATS_FIELDS order) of the moves of the leaf parents that "
       "moves[j] makes from boards[parents[j]], summed over j < n.");

    m.def("batch_stats_sum", [](py::array boards, u64 n, int us, const py::bytes& ci) {
        const Board* b = ptr<Board>(boards, n, "boards");
        const CastleInfo& cinfo = castle(ci);
        StatCounts s;
        {
            py::gil_scoped_release nogil;
            s = by_side<StatsSumF>(us, b, n, cinfo);
        }
        return stats_tuple(s);
    }, "Statistics (a 13-tuple) of the legal moves of boards[i], summed over i < n: depth 1 below each.");

    m.def("batch_perft", [](py::array boards, u64 n, int us, const py::bytes& ci, int depth) {
        check_depth(depth);
        const Board* b = ptr<Board>(boards, n, "boards");
        const CastleInfo& cinfo = castle(ci);
        py::array_t<u64> out(n);
        u64* o = out.mutable_data();
        py::gil_scoped_release nogil;
        for (u64 i = 0; i < n; ++i) o[i] = perft_any(b[i], cinfo, us, depth);
        return out;
    }, "CPU perft of each board (uint64 counts), e.g. to audit transposition-table entries.");

    // ----- transposition-table mode (keys are two uint64 words lo, hi; TT entries two words) -----
    m.def("batch_keys", [](py::array boards, u64 n, int us, const py::bytes& ci, py::array z, py::array keys) {
        const Board* b = ptr<Board>(boards, n, "boards");
        Key128* k = ptr<Key128>(keys, n, "keys");
        const CastleInfo& cinfo = castle(ci);
        const ZobristKeys& zk = zkeys(z);
        py::gil_scoped_release nogil;
        by_side<KeysF>(us, b, n, cinfo, zk, k);
    }, "keys[i] = Zobrist key of boards[i] from scratch (compute_hash).");

    m.def("batch_count_probe", [](py::array boards, py::array keys, u64 n, int us, const py::bytes& ci,
                                  py::object tt, u64 slots, py::array counts, py::array values) {
        const Board* b = ptr<Board>(boards, n, "boards");
        const Key128* k = ptr<Key128>(keys, n, "keys");
        const TTEntry16* t = nullptr;
        if (!tt.is_none()) {
            py::array ta = tt.cast<py::array>();
            t = ptr<TTEntry16>(ta, slots, "tt");
        }
        u32* c = ptr<u32>(counts, n, "counts");
        u64* v = ptr<u64>(values, n, "values");
        const CastleInfo& cinfo = castle(ci);
        py::gil_scoped_release nogil;
        by_side<CountProbeF>(us, b, k, n, cinfo, t, slots, c, v);
    }, "Probe the TT (or None): a hit gives counts[i] = 0 and values[i] = its count; else the move count.");

    m.def("batch_make_key", [](py::array boards, py::array keys, py::array parents, py::array moves, u64 n, int us,
                               const py::bytes& ci, py::array z, py::array children, py::array child_keys) {
        const Board* b = reinterpret_cast<const Board*>(boards.data());
        const Key128* k = reinterpret_cast<const Key128*>(keys.data());
        const u32* par = ptr<u32>(parents, n, "parents");
        const Move* mv = ptr<Move>(moves, n, "moves");
        Board* out = ptr<Board>(children, n, "children");
        Key128* ok = ptr<Key128>(child_keys, n, "child keys");
        const CastleInfo& cinfo = castle(ci);
        const ZobristKeys& zk = zkeys(z);
        py::gil_scoped_release nogil;
        by_side<MakeKeyF>(us, b, k, par, mv, n, cinfo, zk, out, ok);
    }, "Child boards and their keys by incremental update (update_hash).");

    m.def("batch_leaf_values", [](py::array boards, py::array parents, py::array moves, u64 n, int us,
                                  const py::bytes& ci, int levels, py::array values) {
        if (levels != 2 && levels != 3) throw std::invalid_argument("levels must be 2 or 3");
        const Board* b = reinterpret_cast<const Board*>(boards.data());
        const u32* par = ptr<u32>(parents, n, "parents");
        const Move* mv = ptr<Move>(moves, n, "moves");
        u64* v = reinterpret_cast<u64*>(values.mutable_data());
        const CastleInfo& cinfo = castle(ci);
        py::gil_scoped_release nogil;
        by_side<LeafValuesF>(us, b, par, mv, n, cinfo, levels, v);
    }, "values[parents[j]] += perft(levels - 1) below boards[parents[j]] after moves[j].");

    // ----- statistics with tables (pc_tt_stats.h; a level's values are 13 slices of n words) -----
    m.def("batch_stats_values", [](py::array boards, u64 n, int us, const py::bytes& ci, py::array values) {
        const Board* b = ptr<Board>(boards, n, "boards");
        u64* v = ptr<u64>(values, (u64)STATS_WORDS * n, "values");
        const CastleInfo& cinfo = castle(ci);
        py::gil_scoped_release nogil;
        by_side<StatsValuesF>(us, b, n, cinfo, v);
    }, "values[c * n + i] = counter c of depth 1 below boards[i] (its moves classified).");

    m.def("batch_stats_leaf_values", [](py::array boards, py::array parents, py::array moves, u64 n, int us,
                                        const py::bytes& ci, py::array values, u64 n_boards) {
        const Board* b = ptr<Board>(boards, n_boards, "boards");
        const u32* par = ptr<u32>(parents, n, "parents");
        const Move* mv = ptr<Move>(moves, n, "moves");
        u64* v = ptr<u64>(values, (u64)STATS_WORDS * n_boards, "values");
        const CastleInfo& cinfo = castle(ci);
        for (u64 j = 0; j < n; ++j)
            if (par[j] >= n_boards) throw std::invalid_argument("parents: index past the boards");
        py::gil_scoped_release nogil;
        by_side<StatsLeafValuesF>(us, b, par, mv, n, cinfo, v, n_boards);
    }, "values[c * n_boards + parents[j]] += counter c of the moves of the leaf parent moves[j] makes.");

    m.def("batch_stats_probe", [](py::array keys, u64 n, py::array tt, u64 slots, py::array counts,
                                  py::array values) {
        const Key128* k = ptr<Key128>(keys, n, "keys");
        const u64* t = ptr<u64>(tt, (u64)TTS_WORDS * slots, "tt");
        u32* c = ptr<u32>(counts, n, "counts");
        u64* v = ptr<u64>(values, (u64)STATS_WORDS * n, "values");
        py::gil_scoped_release nogil;
        for (u64 i = 0; i < n; ++i)
            if (bfs_stats_probe(t, slots, k[i], v, n, i)) c[i] = 0;
    }, "Probe the statistics table: a hit writes values[c * n + i] (13 counters) and counts[i] = 0.");

    m.def("batch_stats_store", [](py::array boards, py::array keys, py::array values, u64 n, py::array tt,
                                  u64 slots, py::object audit, u64 tag) {
        const Board* b = ptr<Board>(boards, n, "boards");
        const Key128* k = ptr<Key128>(keys, n, "keys");
        const u64* v = ptr<u64>(values, (u64)STATS_WORDS * n, "values");
        u64* t = ptr<u64>(tt, (u64)TTS_WORDS * slots, "tt");
        u64* a = nullptr;
        if (!audit.is_none()) {
            py::array aa = audit.cast<py::array>();
            a = ptr<u64>(aa, 8 * slots, "audit");
        }
        py::gil_scoped_release nogil;
        for (u64 i = 0; i < n; ++i) bfs_stats_store(t, slots, k[i], v, n, i, a, b[i], tag);
    }, "Store each board's finished counters (values[c * n + i]) in the statistics table (8 words an "
       "entry; nodes 0, or a counter other than nodes of 2^32 or more, never stored; audit as batch_store).");

    m.def("batch_upsweep", [](py::array parents, py::array child_values, u64 n, py::array parent_values) {
        const u32* par = ptr<u32>(parents, n, "parents");
        const u64* cv = ptr<u64>(child_values, n, "child values");
        u64* pv = reinterpret_cast<u64*>(parent_values.mutable_data());
        py::gil_scoped_release nogil;
        for (u64 i = 0; i < n; ++i) pv[par[i]] += cv[i];
    }, "parent_values[parents[i]] += child_values[i].");

    m.def("batch_store", [](py::array boards, py::array keys, py::array values, u64 n, py::array tt, u64 slots,
                            py::object audit, u64 tag) {
        const Board* b = ptr<Board>(boards, n, "boards");
        const Key128* k = ptr<Key128>(keys, n, "keys");
        const u64* v = ptr<u64>(values, n, "values");
        TTEntry16* t = ptr<TTEntry16>(tt, slots, "tt");
        u64* a = nullptr;
        if (!audit.is_none()) {
            py::array aa = audit.cast<py::array>();
            a = ptr<u64>(aa, 8 * slots, "audit");
        }
        py::gil_scoped_release nogil;
        for (u64 i = 0; i < n; ++i) bfs_store(t, slots, k[i], v[i], a, b[i], tag);
    }, "Store each board's finished count in the TT (and, in audit mode, what was stored); tag = store "
       "launch number (from 1) << 1 | side to move.");
}
