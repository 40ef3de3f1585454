// Host transposition tables and the perft recursion that uses them.
//
// One table per remaining depth d (a count depends on the position and d, so each table stores
// counts of one depth only). Two kinds:
//   * lossless (the levels nearest the root): chained hash tables holding the full 128-bit key and
//     a 128-bit count. All of them draw nodes from one pool of fixed capacity; when it is full they
//     stop storing (a miss costs time, an eviction could never cost a count, but we do not evict).
//     A mutex guards them: they see few probes (only positions a few plies below the root).
//   * lossy (the deep levels, which see nearly every probe): 16-byte entries (kernels/pc_tt.h),
//     check = key.hi ^ count, in two-entry buckets chosen by key.lo: way 0 keeps the bigger count,
//     way 1 always takes the store. Lock-free: threads read and write each word with a relaxed
//     atomic; a torn entry fails the check.
//     Counts of 0 (mate/stalemate below) and counts >= 2^64 are not stored in them.
// No probe or store at remaining depth 1 (counting the moves is cheaper than a probe), and none
// below the table's min_depth. Depth 2 pays: startpos perft 8 took 12.1 s probing from depth 2 and
// 18.6 s probing from depth 3 (256 MiB, one thread, AMD EPYC, 2026-11-21).
//
// Record mode (tests, single thread): next to every entry the table keeps the position it was
// stored for (board, side to move, castling rook squares), so an audit can recompute each count
// and each key from scratch and prove that no entry is wrong.
#pragma once
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <utility>

#include "host.h"
#include "pc_tt.h"

namespace pc_tt {

using pc_host::Root;
typedef unsigned __int128 u128;

// The sums of a count through the tables saturate at U128_SAT: a table hit brings a whole subtree,
// so a count passes 2^128 - 1 at depths a count without tables never reaches (a king against a king
// at depth 48 in seconds), and a plain u128 sum wrapped silently. A saturated sum stays saturated up
// to the root, is never stored, and is refused there (zobrist.cpp: OverflowError); a node whose sum
// saturates returns at once (two kings at depth 58 took 36 s to be refused, each saturated subtree
// counted again at every visit).
constexpr u128 U128_SAT = ~(u128)0;
inline u128 add_sat(u128 a, u128 b) {
    const u128 s = a + b;
    return s < a ? U128_SAT : s;
}

// A position as recorded next to an entry in record mode. valid == 0: nothing recorded.
struct Rec {
    u64 pbq, nbk, rqk, black;
    u8 state, us, valid, pad;
    signed char rooks[4];  // castle_rooks of the root (white h, white a, black h, black a), -1 = none
};

inline Rec make_rec(const Board& b, int us, const CastleInfo& ci) {
    Rec r;
    r.pbq = b.pbq;
    r.nbk = b.nbk;
    r.rqk = b.rqk;
    r.black = b.black;
    r.state = b.state;
    r.us = (u8)us;
    r.valid = 1;
    r.pad = 0;
    for (int i = 0; i < 4; ++i) r.rooks[i] = (b.state >> i & 1) ? (signed char)ci.side[i >> 1][i & 1].rook : (signed char)-1;
    return r;
}

// The core-args tuple (perft_core.position.Position.core_args, chess960 False) of a recorded position.
inline py::tuple rec_args(const Rec& r) {
    int f = (r.state >> 4) - 1;
    int ep = f < 0 ? -1 : (r.us == WHITE ? 40 : 16) + f;
    return py::make_tuple(r.pbq, r.nbk, r.rqk, r.black, r.us == WHITE,
                          py::make_tuple((int)r.rooks[0], (int)r.rooks[1], (int)r.rooks[2], (int)r.rooks[3]), ep,
                          false);
}

struct LevelStats {
    u64 probes = 0, hits = 0, stores = 0;
    u64 replaced = 0;  // lossy: a store overwrote another key's entry
    u64 full = 0;      // lossless: not stored, the pool was full
    u64 unstorable = 0;  // lossy: count 0 or >= 2^64, not stored
    void add(const LevelStats& o) {
        probes += o.probes;
        hits += o.hits;
        stores += o.stores;
        replaced += o.replaced;
        full += o.full;
        unstorable += o.unstorable;
    }
};

enum LevelKind { LEVEL_NONE = 0, LEVEL_LOSSY = 1, LEVEL_LOSSLESS = 2 };

inline const char* kind_name(int k) { return k == LEVEL_LOSSY ? "lossy" : k == LEVEL_LOSSLESS ? "lossless" : "none"; }

struct LosslessNode {
    Key128 key;
    u64 count_lo, count_hi;
    u32 next;  // index + 1 of the next node of the chain, 0 = end
};

// A zero-filled array from its own anonymous mapping, its pages made at once (MAP_POPULATE): one
// system call instead of two page faults a page (a probe's read maps the shared zero page, the first
// store copies it), the same cost on every run. Transparent huge pages were dropped (NOTES.md
// session 11): on this project's machine their first touch cost 0.0-0.55 s of system time for
// 256 MiB, by whether the kernel handed out fresh or reused memory, against 0.08 s here and 2 % more
// user time for small pages.
template <class T>
class Mapped {
  public:
    Mapped() = default;
    explicit Mapped(u64 n) {
        if (n == 0) return;
        bytes_ = n * sizeof(T);
        void* m = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (m == MAP_FAILED) throw std::bad_alloc();
        p_ = static_cast<T*>(m);
    }
    Mapped(Mapped&& o) noexcept { swap(o); }
    Mapped& operator=(Mapped&& o) noexcept {
        swap(o);
        return *this;
    }
    Mapped(const Mapped&) = delete;
    Mapped& operator=(const Mapped&) = delete;
    ~Mapped() {
        if (p_) munmap(p_, bytes_);
    }
    T* get() const { return p_; }
    T& operator[](u64 i) const { return p_[i]; }

  private:
    void swap(Mapped& o) {
        std::swap(p_, o.p_);
        std::swap(bytes_, o.bytes_);
    }
    T* p_ = nullptr;
    size_t bytes_ = 0;
};

// What the node-count tables below and the statistics tables of src/tt_stats.h share: the key
// seed, the levels and their sizes, the lossy levels' words, the lossless levels' bucket heads, the
// record arrays and the per-level statistics. A derived class adds its lossless nodes
// (capacity_ of them) and the probe and store of its entries.
//
// Levels exist for remaining depths min_depth .. max_depth - 1 (the root is never stored): lossless
// for d >= lossless_from, lossy below. `bytes` bounds every allocation (record arrays included). Of
// the budget, the lossless pool gets 1/16 when lossy levels exist too (all of it otherwise); the
// lossy levels share the rest (below). A lossy slot is `slot_words` words (and a Rec when
// recording), a lossless node `node_bytes` (its Rec included) plus a bucket head in each lossless level.
class Levels {
  public:
    Levels(int max_depth, u64 bytes, u64 seed, int min_depth, int lossless_from, bool record, u64 slot_words,
           u64 node_bytes)
        : max_depth_(max_depth), min_depth_(std::max(min_depth, 2)), seed_(seed), record_(record),
          budget_(bytes), slot_words_(slot_words) {
        if (max_depth < 0 || max_depth > 64) throw std::invalid_argument("max_depth must be in 0..64");
        zobrist_init(keys_, seed);
        kinds_.assign(max_depth_ + 1, LEVEL_NONE);
        sizes_.assign(max_depth_ + 1, 0);
        lossy_.resize(max_depth_ + 1);
        lossy_rec_.resize(max_depth_ + 1);
        heads_.resize(max_depth_ + 1);
        stats_.assign(max_depth_ + 1, LevelStats());
        int n_lossy = 0, n_lossless = 0;
        for (int d = min_depth_; d < max_depth_; ++d) {
            kinds_[d] = d >= lossless_from ? LEVEL_LOSSLESS : LEVEL_LOSSY;
            (kinds_[d] == LEVEL_LOSSY ? n_lossy : n_lossless)++;
        }
        u64 ll_budget = n_lossless == 0 ? 0 : (n_lossy == 0 ? bytes : bytes / 16);
        u64 lossy_budget = bytes - ll_budget;
        // Lossy shares: the i-th lossy level from the bottom weighs 2^-(i+1) (the level below the
        // leaves sees most of the distinct positions), but no less than 1 / (4 n_lossy) so that
        // the upper levels of a deep search keep useful tables; weights are then normalised.
        std::vector<double> w(max_depth_ + 1, 0.0);
        double wsum = 0;
        for (int d = min_depth_, i = 0; d < max_depth_; ++d) {
            if (kinds_[d] != LEVEL_LOSSY) continue;
            w[d] = std::max(std::ldexp(1.0, -(i + 1)), 1.0 / (4.0 * n_lossy));
            wsum += w[d];
            ++i;
        }
        const u64 entry_bytes = 8 * slot_words + (record ? sizeof(Rec) : 0);
        for (int d = min_depth_; d < max_depth_; ++d) {
            if (kinds_[d] != LEVEL_LOSSY) continue;
            u64 n = (u64)((double)lossy_budget * (w[d] / wsum)) / entry_bytes & ~1ULL;  // whole buckets
            if (n == 0) {
                kinds_[d] = LEVEL_NONE;
                continue;
            }
            sizes_[d] = n;
            lossy_[d] = Mapped<u64>(slot_words * n);
            if (record) lossy_rec_[d] = Mapped<Rec>(n);
            allocated_ += n * entry_bytes;
        }
        if (n_lossless) {
            // Per node: the node (its record included), and one bucket head in each lossless level.
            const u64 per_node = node_bytes + 4 * (u64)n_lossless;
            u64 cap = ll_budget / per_node;
            if (cap > 0xFFFFFFF0ULL) cap = 0xFFFFFFF0ULL;
            for (int d = min_depth_; d < max_depth_; ++d) {
                if (kinds_[d] != LEVEL_LOSSLESS) continue;
                if (cap == 0) {
                    kinds_[d] = LEVEL_NONE;
                    continue;
                }
                sizes_[d] = cap;
                heads_[d] = Mapped<u32>(cap);
                allocated_ += 4 * cap;
            }
            if (cap) {
                capacity_ = cap;
                if (record) node_rec_ = Mapped<Rec>(cap);
                allocated_ += cap * node_bytes;
            }
        }
        for (int d = max_depth_; d >= 0; --d)
            if (kinds_[d] != LEVEL_NONE) lowest_ = d;
    }

    const ZobristKeys& keys() const { return keys_; }
    int max_depth() const { return max_depth_; }
    int min_depth() const { return min_depth_; }
    // The lowest remaining depth that has a table (a budget too small for a level drops it).
    int lowest_level() const { return lowest_; }
    u64 seed() const { return seed_; }
    bool record() const { return record_; }
    u64 allocated() const { return allocated_; }
    u64 budget() const { return budget_; }
    int kind(int d) const { return d >= 0 && d <= max_depth_ ? kinds_[d] : LEVEL_NONE; }
    u64 slots(int d) const {
        int k = kind(d);
        return k == LEVEL_LOSSY ? sizes_[d] : k == LEVEL_LOSSLESS ? capacity_ : 0;
    }
    u64 nodes_used() const { return used_; }
    const LevelStats& stats(int d) const { return stats_[d]; }
    std::mutex& mutex() { return mutex_; }

    // The bucket of key k in level d: a lossy level's two-entry bucket, a lossless level's chain.
    u64 bucket(int d, const Key128& k) const {
        return kinds_[d] == LEVEL_LOSSY ? tt16_slot(k, sizes_[d] / 2) : kinds_[d] == LEVEL_LOSSLESS ? tt16_slot(k, sizes_[d]) : 0;
    }

    void add_stats(const std::vector<LevelStats>& local) {
        std::lock_guard<std::mutex> g(mutex_);
        for (size_t d = 0; d < local.size() && d < stats_.size(); ++d) stats_[d].add(local[d]);
    }

    // Forgets every entry and statistic.
    void clear() {
        std::lock_guard<std::mutex> g(mutex_);
        for (int d = 0; d <= max_depth_; ++d) {
            if (kinds_[d] == LEVEL_LOSSY) {
                std::memset(lossy_[d].get(), 0, 8 * slot_words_ * sizes_[d]);
                if (record_) std::memset(lossy_rec_[d].get(), 0, sizeof(Rec) * sizes_[d]);
            } else if (kinds_[d] == LEVEL_LOSSLESS) {
                std::memset(heads_[d].get(), 0, 4 * sizes_[d]);
            }
            stats_[d] = LevelStats();
        }
        used_ = 0;
    }

  protected:
    int max_depth_, min_depth_, lowest_ = 1 << 30;
    u64 seed_;
    bool record_;
    u64 budget_, allocated_ = 0, slot_words_;
    ZobristKeys keys_;
    std::vector<int> kinds_;
    std::vector<u64> sizes_;  // slots of a lossy level, buckets of a lossless one
    std::vector<Mapped<u64>> lossy_;
    std::vector<Mapped<Rec>> lossy_rec_;
    std::vector<Mapped<u32>> heads_;
    Mapped<Rec> node_rec_;
    u64 capacity_ = 0, used_ = 0;
    std::vector<LevelStats> stats_;
    std::mutex mutex_;
};

// All the tables of one search (or of several searches with the same key seed): 16-byte lossy
// entries (kernels/pc_tt.h) and LosslessNode nodes.
class Table : public Levels {
  public:
    Table(int max_depth, u64 bytes, u64 seed, int min_depth, int lossless_from, bool record)
        : Levels(max_depth, bytes, seed, min_depth, lossless_from, record, 2,
                 sizeof(LosslessNode) + (record ? sizeof(Rec) : 0)) {
        if (capacity_) nodes_ = Mapped<LosslessNode>(capacity_);
    }

    bool probe(int d, const Key128& k, u128& count, LevelStats& st) {
        ++st.probes;
        bool hit = kinds_[d] == LEVEL_LOSSY ? probe_lossy(d, k, count) : probe_lossless(d, k, count);
        st.hits += hit;
        return hit;
    }

    void store(int d, const Key128& k, u128 count, const Board& b, int us, const CastleInfo& ci, LevelStats& st) {
        if (kinds_[d] == LEVEL_LOSSY) store_lossy(d, k, count, b, us, ci, st);
        else store_lossless(d, k, count, b, us, ci, st);
    }

    // Asks the CPU to fetch the lossy bucket of key k in level d (a miss in a table of hundreds of
    // MiB costs a trip to memory; prefetched while the siblings are made, it overlaps).
    void prefetch(int d, const Key128& k) const {
        if (kind(d) == LEVEL_LOSSY) __builtin_prefetch(bucket_ptr(d, k));
    }

    // The audit walk: calls f(depth, kind, bucket, key, key_known, count, rec) for every stored
    // entry. Lossy entries know only key.hi and their bucket (a function of key.lo, see bucket()):
    // key.lo is then 0 and key_known false. Not thread-safe against a running search.
    template <class F>
    void for_each(F&& f) const {
        static const Rec none = Rec();
        for (int d = 0; d <= max_depth_; ++d) {
            if (kinds_[d] == LEVEL_LOSSY) {
                const u64* w = lossy_[d].get();
                for (u64 s = 0; s < sizes_[d]; ++s) {
                    u64 check = w[2 * s], data = w[2 * s + 1];
                    if (data == 0) continue;
                    Key128 k = {0, check ^ data};
                    f(d, LEVEL_LOSSY, s / 2, k, false, (u128)data, record_ ? lossy_rec_[d][s] : none);
                }
            } else if (kinds_[d] == LEVEL_LOSSLESS) {
                for (u64 h = 0; h < sizes_[d]; ++h) {
                    for (u32 i = heads_[d][h]; i; i = nodes_[i - 1].next) {
                        const LosslessNode& nd = nodes_[i - 1];
                        u128 c = ((u128)nd.count_hi << 64) | nd.count_lo;
                        f(d, LEVEL_LOSSLESS, h, nd.key, true, c, record_ ? node_rec_[i - 1] : none);
                    }
                }
            }
        }
    }

  private:
    // A lossy level is an array of buckets of two 16-byte entries (one 32-byte half cache line).
    // Way 0 keeps the bigger count (the subtree that costs more to recount), way 1 takes every
    // other store: the classic two-tier replacement, with the count standing in for the depth.
    u64* bucket_ptr(int d, const Key128& k) const { return lossy_[d].get() + 4 * tt16_slot(k, sizes_[d] / 2); }

    bool probe_lossy(int d, const Key128& k, u128& count) {
        u64* w = bucket_ptr(d, k);
        for (int way = 0; way < 2; ++way, w += 2) {
            u64 check = __atomic_load_n(w, __ATOMIC_RELAXED);
            u64 data = __atomic_load_n(w + 1, __ATOMIC_RELAXED);
            if (tt16_match(check, data, k)) {
                count = data;
                return true;
            }
        }
        return false;
    }

    void store_lossy(int d, const Key128& k, u128 count, const Board& b, int us, const CastleInfo& ci,
                     LevelStats& st) {
        if (count == 0 || (count >> 64) != 0) {
            ++st.unstorable;
            return;
        }
        u64* w = bucket_ptr(d, k);
        u64 c0 = __atomic_load_n(w, __ATOMIC_RELAXED), d0 = __atomic_load_n(w + 1, __ATOMIC_RELAXED);
        u64 c1 = __atomic_load_n(w + 2, __ATOMIC_RELAXED), d1 = __atomic_load_n(w + 3, __ATOMIC_RELAXED);
        int way;
        if (tt16_match(c0, d0, k)) way = 0;
        else if (tt16_match(c1, d1, k)) way = 1;
        else way = (u64)count >= d0 ? 0 : 1;  // an empty way 0 has d0 == 0
        u64 old = way == 0 ? d0 : d1, old_check = way == 0 ? c0 : c1;
        if (old != 0 && (old_check ^ old) != k.hi) ++st.replaced;
        __atomic_store_n(w + 2 * way, tt16_check((u64)count, k), __ATOMIC_RELAXED);
        __atomic_store_n(w + 2 * way + 1, (u64)count, __ATOMIC_RELAXED);
        if (record_) lossy_rec_[d][(u64)(w - lossy_[d].get()) / 2 + way] = make_rec(b, us, ci);
        ++st.stores;
    }

    bool probe_lossless(int d, const Key128& k, u128& count) {
        std::lock_guard<std::mutex> g(mutex_);
        for (u32 i = heads_[d][tt16_slot(k, sizes_[d])]; i; i = nodes_[i - 1].next) {
            const LosslessNode& nd = nodes_[i - 1];
            if (key_eq(nd.key, k)) {
                count = ((u128)nd.count_hi << 64) | nd.count_lo;
                return true;
            }
        }
        return false;
    }

    void store_lossless(int d, const Key128& k, u128 count, const Board& b, int us, const CastleInfo& ci,
                        LevelStats& st) {
        std::lock_guard<std::mutex> g(mutex_);
        u32& head = heads_[d][tt16_slot(k, sizes_[d])];
        for (u32 i = head; i; i = nodes_[i - 1].next)
            if (key_eq(nodes_[i - 1].key, k)) return;  // another thread stored it first
        if (used_ >= capacity_) {
            ++st.full;
            return;
        }
        LosslessNode& nd = nodes_[used_];
        nd.key = k;
        nd.count_lo = (u64)count;
        nd.count_hi = (u64)(count >> 64);
        nd.next = head;
        if (record_) node_rec_[used_] = make_rec(b, us, ci);
        head = (u32)(++used_);
        ++st.stores;
    }

    Mapped<LosslessNode> nodes_;
};

// The Python class of a table type T (Table, or StatsTable of src/tt_stats.h): its constructor,
// properties, levels, per-level statistics, bucket and clear; each caller adds entries and lookup.
template <class T>
py::class_<T> bind_tables(py::module_& m, const char* name, const char* doc) {
    py::class_<T> c(m, name, doc);
    c.def(py::init([](int max_depth, u64 bytes, u64 seed, int min_depth, int lossless_from, bool record) {
          if (lossless_from < 0) lossless_from = max_depth - 3;
          return new T(max_depth, bytes, seed, min_depth, lossless_from, record);
      }),
      py::arg("max_depth"), py::arg("bytes"), py::arg("seed"), py::arg("min_depth") = 2,
      py::arg("lossless_from") = -1, py::arg("record") = false)
        .def_property_readonly("seed", &T::seed)
        .def_property_readonly("max_depth", &T::max_depth)
        .def_property_readonly("min_depth", &T::min_depth)
        .def_property_readonly("budget_bytes", &T::budget)
        .def_property_readonly("allocated_bytes", &T::allocated)
        .def_property_readonly("lossless_used", &T::nodes_used)
        .def_property_readonly("record", &T::record)
        .def("levels", [](const T& t) {
            py::list out;
            for (int d = 0; d <= t.max_depth(); ++d)
                if (t.kind(d) != LEVEL_NONE) out.append(py::make_tuple(d, kind_name(t.kind(d)), t.slots(d)));
            return out;
        }, "[(remaining depth, 'lossy' | 'lossless', slots)]; lossless levels share one pool of `slots` nodes.")
        .def("stats", [](const T& t) {
            py::list out;
            for (int d = 0; d <= t.max_depth(); ++d) {
                if (t.kind(d) == LEVEL_NONE) continue;
                const LevelStats& s = t.stats(d);
                py::dict e;
                e["depth"] = d;
                e["kind"] = kind_name(t.kind(d));
                e["probes"] = s.probes;
                e["hits"] = s.hits;
                e["stores"] = s.stores;
                e["replaced"] = s.replaced;
                e["full"] = s.full;
                e["unstorable"] = s.unstorable;
                out.append(e);
            }
            return out;
        })
        .def("bucket", [](const T& t, u64 lo, int depth) {
            if (t.kind(depth) == LEVEL_NONE) throw std::invalid_argument("no table at that depth");
            return t.bucket(depth, Key128{lo, 0});
        }, py::arg("key_lo"), py::arg("depth"), "The bucket a key (by its low half) maps to in a level.")
        .def("clear", &T::clear);
    return c;
}

// Test-only planted key bugs (the `fault` argument of perft_tt): FAULT_WEAK_CAPTURE_KEY keeps
// only 8 bits of each half of the key after a capture, a seed-dependent collision generator that a
// second-seed run must catch; FAULT_DROP_CAPTURED leaves the captured piece in the key, a
// structural bug (seed-independent) that the TT-off comparison and the audit must catch.
enum Fault { FAULT_NONE = 0, FAULT_WEAK_CAPTURE_KEY = 1, FAULT_DROP_CAPTURED = 2 };

// One thread's view of a search: the table, the keys, the root's castling geometry, own stats.
struct Search {
    Table& tt;
    const ZobristKeys& z;
    const CastleInfo& ci;
    std::vector<LevelStats> st;
    Search(Table& t, const CastleInfo& c) : tt(t), z(t.keys()), ci(c), st(t.max_depth() + 1) {}
};

template <int Us, int F>
inline Key128 child_key(const Key128& k, const Board& b, Move m, const Search& s) {
    Key128 c = update_hash<Us>(k, b, m, s.ci, s.z);
    if (F != FAULT_NONE) {
        const int flag = mv_flag(m);
        const bool capture = flag == MF_EP || (flag != MF_CASTLE && (occupied(b) & bit(mv_to(m))));
        if (capture && F == FAULT_WEAK_CAPTURE_KEY) {
            c.lo &= 0xFF;
            c.hi &= 0xFF;
        }
        if (capture && F == FAULT_DROP_CAPTURED) {
            const int victim = flag == MF_EP ? mv_to(m) ^ 8 : mv_to(m);
            key_xor(c, s.z.psq[Us ^ 1][flag == MF_EP ? PAWN : piece_code(b, victim)][victim]);
        }
    }
    return c;
}

// Perft of b (key k, Us to move) at remaining depth >= 1, through the tables.
// A stopped count (pc_host::stop_requested, checked STOP_PLIES or more plies above the leaves, as
// perft_rec does) returns early with a partial sum; once stopped it stays stopped, so a node that
// might hold a partial sum (STOP_PLIES or more plies above the leaves) stores nothing then.
template <int Us, int F>
u128 tt_rec(const Board& b, const Key128& k, int depth, Search& s) {
    if (depth == 1) return count_moves<Us>(b, s.ci);
    if (depth >= pc_host::STOP_PLIES && pc_host::stop_requested()) return 0;
    const bool use = s.tt.kind(depth) != LEVEL_NONE;
    u128 total = 0;
    if (use && s.tt.probe(depth, k, total, s.st[depth])) return total;
    if (depth - 1 < s.tt.lowest_level()) {  // no table below: count without keys
        total = pc_host::perft_rec<Us>(b, s.ci, depth);
    } else {
        // Children and their keys first, each child's bucket prefetched; then the counts (in
        // batches of PC_MAX_MOVES, one batch but where a node has more moves: pc_host::MoveList).
        pc_host::MoveList list;
        list.generate<Us>(b, s.ci);
        Board child[PC_MAX_MOVES];
        Key128 key[PC_MAX_MOVES];
        for (int first = 0; first < list.n; first += PC_MAX_MOVES) {
            const int n = std::min(list.n - first, PC_MAX_MOVES);
            for (int i = 0; i < n; ++i) {
                child[i] = b;
                make_move<Us>(child[i], list[first + i], s.ci);
                key[i] = child_key<Us, F>(k, b, list[first + i], s);
                s.tt.prefetch(depth - 1, key[i]);
            }
            for (int i = 0; i < n; ++i) {
                total = add_sat(total, tt_rec<Us ^ 1, F>(child[i], key[i], depth - 1, s));
                if (total == U128_SAT) return U128_SAT;  // refused at the root: the rest would not change that
            }
        }
    }
    if (use && (depth < pc_host::STOP_PLIES || !pc_host::stop_requested()))  // a saturated sum returned above
        s.tt.store(depth, k, total, b, Us, s.ci, s.st[depth]);
    return total;
}

template <int F>
u128 tt_any(const Board& b, const Key128& k, int us, int depth, Search& s) {
    if (depth == 0) return 1;
    return us == WHITE ? tt_rec<WHITE, F>(b, k, depth, s) : tt_rec<BLACK, F>(b, k, depth, s);
}

inline Key128 root_key(const Board& b, int us, const CastleInfo& ci, const ZobristKeys& z) {
    return us == WHITE ? compute_hash<WHITE>(b, ci, z) : compute_hash<BLACK>(b, ci, z);
}

inline Key128 play_key(const Board& b, int us, Move m, const Key128& k, const CastleInfo& ci, const ZobristKeys& z) {
    return us == WHITE ? update_hash<WHITE>(k, b, m, ci, z) : update_hash<BLACK>(k, b, m, ci, z);
}

// Divide through the tables: the count below each root move. Threads share the tables and take
// subtrees of balanced size from a shared counter (pc_host::split_divide, as pc_host::divide_counts).
template <int F>
std::vector<u128> divide_tt_counts(const Root& r, const std::vector<Move>& moves, int depth, int threads, Table& tt) {
    std::vector<u128> out(moves.size(), 0);
    if (depth <= 0) return out;
    if (depth > tt.max_depth()) throw std::invalid_argument("depth exceeds the table's max_depth");
    if (tt.record() && threads > 1) throw std::invalid_argument("a recording table needs threads=1");
    struct Item {
        Board b;
        Key128 k;
        int root, us, depth;
    };
    const ZobristKeys& z = tt.keys();
    Search probe_keys(tt, r.ci);
    const Key128 k0 = root_key(r.board, r.us, r.ci, z);
    std::vector<Item> items;
    pc_host::split_divide(
        r, Item{r.board, k0, -1, r.us, depth}, moves, depth, threads, items,
        [&](const Item& p, Move m, const Board& c, int root) {
            Key128 ck = p.us == WHITE ? child_key<WHITE, F>(p.k, p.b, m, probe_keys)
                                      : child_key<BLACK, F>(p.k, p.b, m, probe_keys);
            return Item{c, ck, root, p.us ^ 1, 0};
        });
    std::vector<u128> sums(moves.size(), 0);
    std::mutex sums_mutex;
    std::atomic<size_t> next{0};
    pc_host::run_workers(threads, items.size(), [&]() {
        Search s(tt, r.ci);
        for (size_t k; !pc_host::stop_requested() && (k = next.fetch_add(1)) < items.size();) {
            u128 c = tt_any<F>(items[k].b, items[k].k, items[k].us, items[k].depth, s);
            if (pc_host::stop_requested()) break;  // c may be cut short: discard it
            std::lock_guard<std::mutex> g(sums_mutex);
            sums[items[k].root] = add_sat(sums[items[k].root], c);
        }
        tt.add_stats(s.st);
    });
    return sums;
}

inline std::vector<u128> divide_tt(const Root& r, const std::vector<Move>& moves, int depth, int threads, Table& tt,
                                   int fault) {
    switch (fault) {
        case FAULT_NONE: return divide_tt_counts<FAULT_NONE>(r, moves, depth, threads, tt);
        case FAULT_WEAK_CAPTURE_KEY: return divide_tt_counts<FAULT_WEAK_CAPTURE_KEY>(r, moves, depth, threads, tt);
        case FAULT_DROP_CAPTURED: return divide_tt_counts<FAULT_DROP_CAPTURED>(r, moves, depth, threads, tt);
    }
    throw std::invalid_argument("unknown fault");
}

}  // namespace pc_tt
