// Host statistics transposition tables (issue 36): the tables of a CPU statistics count with tables
// (perft_core/src/stats.cpp, stats_tt_rec). A class of their own beside the node-count tables of
// tt.h, whose code and speed stay as they were; the same levels (pc_tt::Levels: one level per
// remaining depth, lossless chained levels near the root, lossy two-way buckets below), the same
// lock-free rule, the same record mode for the audit. Entries hold the 13 counters of StatCounts.
//
// Every entry is verified as the GPU's statistics entries are (kernels/pc_tt_stats.h): its check
// word is key.hi ^ tts_mix(the 13 counters), tts_mix a chain of bijections in which every counter
// changes the digest. A probe accepts an entry only if nodes != 0 and check ^ tts_mix(counters) ==
// key.hi, with the bucket chosen by key.lo (lossy) or the full 128-bit key compared (lossless):
// 128 key bits and every counter take part. A torn entry (threads store word by word without a
// lock: words of two stores) or a counter changed after the store fails the check but with
// probability 2^-64 (the XOR check of Hyatt and Mann, ICGA Journal 25(1), 2002, over the counters'
// digest). nodes == 0 marks an empty slot: a subtree without leaves is never stored.
//
// A lossy entry is 16 words (128 bytes: two cache lines, a bucket of two entries is four):
//     w[0]        check = key.hi ^ tts_mix(counters)
//     w[1]        key.hi again: a hint, so that a probe digests only the way that may hold its key (a
//                 hint that lies costs a miss, never a count: the check decides)
//     w[2 .. 14]  the 13 counters, perft_core.stats.STATS_FIELDS order (nodes first)
//     w[15]       unused
// Way 0 of a bucket keeps the entry with more nodes, way 1 takes every other store (tt.h's rule).
#pragma once
#include "pc_tt_stats.h"
#include "tt.h"

namespace pc_tt {

enum { STE_CHECK = 0, STE_HINT = 1, STE_COUNTERS = 2, STE_WORDS = 16 };

// StatCounts from its STATS_WORDS words (stats_words, kernels/pc_stats.h, is the other way).
inline void stats_from_words(const u64* w, StatCounts& s) {
    s.nodes = w[0];
    s.captures = w[1];
    s.en_passant = w[2];
    s.castles = w[3];
    s.promotions = w[4];
    for (int k = 0; k < 4; ++k) {
        s.checks[k] = w[5 + k];
        s.mates[k] = w[9 + k];
    }
}

struct StatsNode {  // a lossless level's node: the full key, the check word, the counters
    Key128 key;
    u64 check;
    u64 w[STATS_WORDS];
    u32 next;  // index + 1 of the next node of the chain, 0 = end
};

class StatsTable : public Levels {
  public:
    // Levels and sizes: pc_tt::Levels with 16-word lossy entries and StatsNode nodes; arguments as Table's.
    StatsTable(int max_depth, u64 bytes, u64 seed, int min_depth, int lossless_from, bool record)
        : Levels(max_depth, bytes, seed, min_depth, lossless_from, record, STE_WORDS,
                 sizeof(StatsNode) + (record ? sizeof(Rec) : 0)) {
        if (capacity_) nodes_ = Mapped<StatsNode>(capacity_);
    }

    bool probe(int d, const Key128& k, StatCounts& out, LevelStats& st) {
        ++st.probes;
        bool hit = kinds_[d] == LEVEL_LOSSY ? probe_lossy(d, k, out) : probe_lossless(d, k, out);
        st.hits += hit;
        return hit;
    }

    void store(int d, const Key128& k, const StatCounts& s, const Board& b, int us, const CastleInfo& ci,
               LevelStats& st) {
        if (s.nodes == 0) {  // no leaves below: an empty slot reads as nodes 0
            ++st.unstorable;
            return;
        }
        u64 w[STATS_WORDS];
        stats_words(s, w);
        if (kinds_[d] == LEVEL_LOSSY) store_lossy(d, k, w, b, us, ci, st);
        else store_lossless(d, k, w, b, us, ci, st);
    }

    // Asks the CPU to fetch the lossy bucket of key k in level d (its four cache lines).
    void prefetch(int d, const Key128& k) const {
        if (kind(d) != LEVEL_LOSSY) return;
        const char* p = reinterpret_cast<const char*>(bucket_ptr(d, k));
        for (int line = 0; line < 4; ++line) __builtin_prefetch(p + 64 * line);
    }

    // The audit walk: f(depth, kind, bucket, key, key_lo_known, counters (13 words), rec) for every
    // stored entry. The key is the one the entry answers for: key.hi = check ^ tts_mix(counters),
    // so an entry whose counters changed after its store shows a key that is not its position's.
    // Lossy entries know only that and their bucket (key.lo 0, key_lo_known false). Not
    // thread-safe against a running search.
    template <class F>
    void for_each(F&& f) const {
        static const Rec none = Rec();
        for (int d = 0; d <= max_depth_; ++d) {
            if (kinds_[d] == LEVEL_LOSSY) {
                for (u64 s = 0; s < sizes_[d]; ++s) {
                    const u64* w = lossy_[d].get() + STE_WORDS * s;
                    const u64* c = w + STE_COUNTERS;
                    if (c[0] == 0) continue;
                    Key128 k = {0, w[STE_CHECK] ^ tts_mix(c)};
                    f(d, LEVEL_LOSSY, s / 2, k, false, c, record_ ? lossy_rec_[d][s] : none);
                }
            } else if (kinds_[d] == LEVEL_LOSSLESS) {
                for (u64 h = 0; h < sizes_[d]; ++h) {
                    for (u32 i = heads_[d][h]; i; i = nodes_[i - 1].next) {
                        const StatsNode& nd = nodes_[i - 1];
                        Key128 k = {nd.key.lo, nd.check ^ tts_mix(nd.w)};
                        f(d, LEVEL_LOSSLESS, h, k, true, static_cast<const u64*>(nd.w),
                          record_ ? node_rec_[i - 1] : none);
                    }
                }
            }
        }
    }

    // Tests only: counter `c` (0 .. 12, STATS_FIELDS order) of every stored entry one more, the
    // check word left as it was (an entry damaged after its store). Returns the entries changed.
    // Every probe must now refuse them, and the audit must report each.
    u64 poison(int c) {
        if (c < 0 || c >= STATS_WORDS) throw std::invalid_argument("counter must be in 0..12");
        std::lock_guard<std::mutex> g(mutex_);
        u64 n = 0;
        for (int d = 0; d <= max_depth_; ++d) {
            if (kinds_[d] == LEVEL_LOSSY) {
                for (u64 s = 0; s < sizes_[d]; ++s) {
                    u64* w = lossy_[d].get() + STE_WORDS * s + STE_COUNTERS;
                    if (w[0]) ++w[c], ++n;
                }
            } else if (kinds_[d] == LEVEL_LOSSLESS) {
                for (u64 h = 0; h < sizes_[d]; ++h)
                    for (u32 i = heads_[d][h]; i; i = nodes_[i - 1].next) ++nodes_[i - 1].w[c], ++n;
            }
        }
        return n;
    }

  private:
    u64* bucket_ptr(int d, const Key128& k) const {
        return lossy_[d].get() + 2 * STE_WORDS * tt16_slot(k, sizes_[d] / 2);
    }

    static u64 load(const u64* p) { return __atomic_load_n(p, __ATOMIC_RELAXED); }

    bool probe_lossy(int d, const Key128& k, StatCounts& out) {
        const u64* e = bucket_ptr(d, k);
        for (int way = 0; way < 2; ++way, e += STE_WORDS) {
            if (load(e + STE_HINT) != k.hi) continue;
            u64 c[STATS_WORDS];
            for (int i = 0; i < STATS_WORDS; ++i) c[i] = load(e + STE_COUNTERS + i);
            if (c[0] == 0 || (load(e + STE_CHECK) ^ tts_mix(c)) != k.hi) continue;
            stats_from_words(c, out);
            return true;
        }
        return false;
    }

    void store_lossy(int d, const Key128& k, const u64* w, const Board& b, int us, const CastleInfo& ci,
                     LevelStats& st) {
        u64* e = bucket_ptr(d, k);
        const u64 h0 = load(e + STE_HINT), n0 = load(e + STE_COUNTERS);
        const u64 h1 = load(e + STE_WORDS + STE_HINT), n1 = load(e + STE_WORDS + STE_COUNTERS);
        int way;
        if (n0 && h0 == k.hi) way = 0;
        else if (n1 && h1 == k.hi) way = 1;
        else way = w[0] >= n0 ? 0 : 1;  // an empty way 0 has n0 == 0
        const u64 old_nodes = way == 0 ? n0 : n1, old_hint = way == 0 ? h0 : h1;
        if (old_nodes != 0 && old_hint != k.hi) ++st.replaced;
        u64* x = e + STE_WORDS * way;
        __atomic_store_n(x + STE_CHECK, k.hi ^ tts_mix(w), __ATOMIC_RELAXED);
        __atomic_store_n(x + STE_HINT, k.hi, __ATOMIC_RELAXED);
        for (int i = 0; i < STATS_WORDS; ++i) __atomic_store_n(x + STE_COUNTERS + i, w[i], __ATOMIC_RELAXED);
        if (record_) lossy_rec_[d][(u64)(x - lossy_[d].get()) / STE_WORDS] = make_rec(b, us, ci);
        ++st.stores;
    }

    bool probe_lossless(int d, const Key128& k, StatCounts& out) {
        std::lock_guard<std::mutex> g(mutex_);
        for (u32 i = heads_[d][tt16_slot(k, sizes_[d])]; i; i = nodes_[i - 1].next) {
            const StatsNode& nd = nodes_[i - 1];
            if (!key_eq(nd.key, k)) continue;
            if (nd.w[0] == 0 || (nd.check ^ tts_mix(nd.w)) != k.hi) return false;
            stats_from_words(nd.w, out);
            return true;
        }
        return false;
    }

    void store_lossless(int d, const Key128& k, const u64* w, const Board& b, int us, const CastleInfo& ci,
                        LevelStats& st) {
        std::lock_guard<std::mutex> g(mutex_);
        u32& head = heads_[d][tt16_slot(k, sizes_[d])];
        for (u32 i = head; i; i = nodes_[i - 1].next) {
            StatsNode& nd = nodes_[i - 1];
            if (!key_eq(nd.key, k)) continue;
            if (nd.w[0] != 0 && (nd.check ^ tts_mix(nd.w)) == k.hi) return;  // another thread stored it first
            for (int j = 0; j < STATS_WORDS; ++j) nd.w[j] = w[j];  // a damaged node: stored again
            nd.check = k.hi ^ tts_mix(w);
            if (record_) node_rec_[i - 1] = make_rec(b, us, ci);
            ++st.stores;
            return;
        }
        if (used_ >= capacity_) {
            ++st.full;
            return;
        }
        StatsNode& nd = nodes_[used_];
        nd.key = k;
        for (int i = 0; i < STATS_WORDS; ++i) nd.w[i] = w[i];
        nd.check = k.hi ^ tts_mix(w);
        nd.next = head;
        if (record_) node_rec_[used_] = make_rec(b, us, ci);
        head = (u32)(++used_);
        ++st.stores;
    }

    Mapped<StatsNode> nodes_;
};

}  // namespace pc_tt
