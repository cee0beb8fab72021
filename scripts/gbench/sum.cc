// A small google-benchmark program whose JSON output is a test fixture of `kgate import
// gbench`: two argument sizes, repetitions with their aggregates, a rate counter and a plain
// user counter. Built and run by gen_gbench_fixture.sh.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <numeric>
#include <vector>

static void BM_sum(benchmark::State& state) {
  std::vector<std::int64_t> data(static_cast<std::size_t>(state.range(0)));
  std::iota(data.begin(), data.end(), 0);
  for (auto _ : state) {
    std::int64_t total = std::accumulate(data.begin(), data.end(), std::int64_t{0});
    benchmark::DoNotOptimize(total);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["elements"] = static_cast<double>(state.range(0));
  state.counters["bytes_touched"] = benchmark::Counter(
      static_cast<double>(state.range(0) * sizeof(std::int64_t)),
      benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_sum)->Arg(64)->Arg(4096);

BENCHMARK_MAIN();
