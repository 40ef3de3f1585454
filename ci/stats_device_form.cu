// The GPU build's form of the statistics leaf (the shared headers with PC_HOST_CODE = 0), compiled
// by nvcc for the host and run on the CPU. The CPU extension compiles the host form (PC_HOST_CODE =
// 1), so its tests never run the GPU-only lines; ci/stats_device_form.py compares the two on
// positions it chooses (no GPU needed).
//
//   stats_device_form TABLES_FILE < records > counters
// TABLES_FILE: perft_core._core.tables_blob()'s bytes (the GPU's g_tables_dev contents). Each input
// line: pbq nbk rqk black state us depth CASTLE_INFO_HEX (gpu_root's fields); each output line: the
// 13 counters (perft_core.stats.STATS_FIELDS order) of the statistics of that position at that
// depth, counted as the GPU counts them: moves listed down to the leaf parents' parents, then each
// leaf parent's moves classified by bfs_stats_leaf (stats_leaf_kernel's element), or by leaf_stats
// at depth 1 (stats_sum_kernel's).
#include <cstdio>
#include <cstring>

#include "chess.h"
#include "pc_stats.h"

static_assert(!PC_HOST_CODE, "compile with nvcc: this program exists to run the GPU build's form of pc_stats.h");

template <int Us>
void count(const Board& b, const CastleInfo& ci, int depth, StatCounts& s) {
    if (depth == 1) {
        leaf_stats<Us>(b, ci, s);
        return;
    }
    Move list[PC_MOVES_BOUND];
    const int n = generate_moves<Us>(b, ci, list);
    for (int i = 0; i < n; ++i) {
        if (depth == 2) {
            bfs_stats_leaf<Us>(b, list[i], ci, s);
        } else {
            Board c = b;
            make_move<Us>(c, list[i], ci);
            count<Us ^ 1>(c, ci, depth - 1, s);
        }
    }
}

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s TABLES_FILE < records\n", argv[0]);
        return 2;
    }
    std::FILE* f = std::fopen(argv[1], "rb");
    if (!f || std::fread(&g_tables_host, sizeof(Tables), 1, f) != 1) {
        std::fprintf(stderr, "cannot read %zu bytes of tables from %s\n", sizeof(Tables), argv[1]);
        return 2;
    }
    std::fclose(f);
    unsigned long long pbq, nbk, rqk, black, state;
    int us, depth;
    char hex[4096];  // 2 * sizeof(CastleInfo) digits expected; a longer field is cut at 4095 and refused below
    while (std::scanf("%llu %llu %llu %llu %llu %d %d %4095s", &pbq, &nbk, &rqk, &black, &state, &us, &depth, hex) == 8) {
        if (std::strlen(hex) != 2 * sizeof(CastleInfo)) {
            std::fprintf(stderr, "castle info: %zu hex digits expected\n", 2 * sizeof(CastleInfo));
            return 2;
        }
        CastleInfo ci;
        unsigned char* p = reinterpret_cast<unsigned char*>(&ci);
        for (size_t i = 0; i < sizeof ci; ++i) {
            unsigned v;
            std::sscanf(hex + 2 * i, "%2x", &v);
            p[i] = (unsigned char)v;
        }
        Board b{pbq, nbk, rqk, black, (u8)state};
        StatCounts s;
        stats_zero(s);
        if (us == WHITE) count<WHITE>(b, ci, depth, s);
        else count<BLACK>(b, ci, depth, s);
        u64 w[STATS_WORDS];
        stats_words(s, w);
        for (int k = 0; k < STATS_WORDS; ++k) std::printf(k ? " %llu" : "%llu", w[k]);
        std::printf("\n");
    }
    return 0;
}
