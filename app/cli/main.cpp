// attnscope-cli: the engine on the command line, no window, no GL.
//
//   attnscope-cli trace [--config FILE|-] [--preset NAME] [run flags] [--format json|text]
//   attnscope-cli bench --variant V --tokens T --d-in N --d-out N --heads H --dropout P
//                       [--seed S] [--repeat K]
//
// Every bad input ends with exit code 2, nothing on stdout and one line on
// stderr that starts with "error: " and names the problem.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <charconv>
#include <chrono>
#include <sys/resource.h>
#include <vector>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "attnscope/attention.hpp"
#include "attnscope/io.hpp"
#include "attnscope/memory.hpp"

namespace core = attnscope::core;

namespace {

constexpr int kExitBadInput = 2;

// The flags that describe one run; each overrides the config file's field.
struct RunOptions {
  std::string config_path;  // empty: no config file
  std::optional<std::string> preset;
  std::optional<std::string> variant;
  std::optional<int> d_out;
  std::optional<int> num_heads;
  std::optional<double> dropout;
  std::optional<std::string> seed;  // parsed by parse_seed: CLI11 would wrap "-1"
  bool qkv_bias = false;
  bool eval = false;
  bool config_given = false;
};

void add_run_options(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("--config", o.config_path,
                 "JSON config file (- reads standard input); see docs/trace-format.md")
      ->each([&o](const std::string&) { o.config_given = true; });
  cmd.add_option("--preset", o.preset, "built-in inputs: book, shiny (default: book)");
  cmd.add_option("--variant", o.variant,
                 "simple, self_attention_v1, self_attention_v2, causal, multihead_wrapper, "
                 "multihead");
  cmd.add_option("--d-out", o.d_out, "output width of the query/key/value projections");
  cmd.add_option("--heads", o.num_heads, "number of attention heads");
  cmd.add_option("--dropout", o.dropout, "dropout probability on the attention weights, 0..1");
  cmd.add_option("--seed", o.seed, "torch.manual_seed value (default 123)");
  cmd.add_flag("--qkv-bias", o.qkv_bias, "give the query/key/value projections a bias");
  cmd.add_flag("--eval", o.eval, "eval mode: dropout off");
}

// A seed in 0..2^64-1, written in decimal; throws core::ParseError.
std::uint64_t parse_seed(const std::string& text) {
  std::uint64_t seed = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, seed);
  if (text.empty() || ec != std::errc() || ptr != end)
    throw core::ParseError("--seed (" + text +
                           ") must be a whole number from 0 to 18446744073709551615");
  return seed;
}

// Config file first, then the flags on top; throws core::ParseError.
void resolve_run(const RunOptions& o, core::Config& config, core::Inputs& inputs) {
  core::RunSpec spec;
  if (o.config_given && o.config_path.empty())
    throw core::ParseError("--config needs a file path (or - for standard input)");
  if (!o.config_path.empty()) {
    const std::string source = o.config_path == "-" ? "standard input" : o.config_path;
    spec = core::parse_run_spec(core::read_text_file(o.config_path), source);
  }
  core::RunSpec flags;
  flags.preset = o.preset;
  if (o.variant) {
    flags.variant = core::parse_variant(*o.variant);
    if (!flags.variant)
      throw core::ParseError("unknown variant '" + *o.variant +
                             "' (known: simple, self_attention_v1, self_attention_v2, causal, "
                             "multihead_wrapper, multihead)");
  }
  flags.d_out = o.d_out;
  flags.num_heads = o.num_heads;
  flags.dropout = o.dropout;
  if (o.seed) flags.seed = parse_seed(*o.seed);
  if (o.qkv_bias) flags.qkv_bias = true;
  if (o.eval) flags.training = false;
  spec = core::merge(std::move(spec), flags);
  // Only a run described by flags alone defaults to the book's example; a
  // config file must say what it runs on.
  if (o.config_path.empty() && !spec.preset && !spec.embeddings) spec.preset = "book";
  core::resolve(spec, config, inputs);
}

// Options of `bench`: a random run of the given size.
struct BenchOptions {
  std::string variant = "multihead";
  int tokens = 1024;
  int d_in = 768;
  int d_out = 768;
  int heads = 12;
  double dropout = 0.1;
  std::string seed = "123";
  int repeat = 5;
  bool eval = false;
};

void add_bench_options(CLI::App& cmd, BenchOptions& o) {
  cmd.add_option("--variant", o.variant, "variant to time")->capture_default_str();
  cmd.add_option("--tokens", o.tokens, "T, the number of tokens")->capture_default_str();
  cmd.add_option("--d-in", o.d_in, "embedding width")->capture_default_str();
  cmd.add_option("--d-out", o.d_out, "projection width")->capture_default_str();
  cmd.add_option("--heads", o.heads, "number of heads")->capture_default_str();
  cmd.add_option("--dropout", o.dropout, "dropout probability")->capture_default_str();
  cmd.add_option("--seed", o.seed, "seed for the inputs and the module")->capture_default_str();
  cmd.add_option("--repeat", o.repeat, "timed runs after one warm-up")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd.add_flag("--eval", o.eval, "eval mode: dropout off");
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

// Times K full traces (every stage kept) after one warm-up run.
int run_bench(const BenchOptions& o) {
  core::keep_freed_memory_for_reuse();  // as the app does: recomputes reuse warm pages
  core::Config config;
  const auto variant = core::parse_variant(o.variant);
  if (!variant) throw core::ParseError("unknown variant '" + o.variant + "'");
  config.variant = *variant;
  config.d_out = o.d_out;
  config.num_heads = o.heads;
  config.dropout = o.dropout;
  config.seed = parse_seed(o.seed);
  config.training = !o.eval;

  core::Inputs inputs;
  if (o.tokens < 1 || o.tokens > core::kMaxTokens || o.d_in < 1 || o.d_in > core::kMaxDim)
    throw core::ParseError("--tokens and --d-in must be between 1 and 4096");
  inputs.embeddings.resize(o.tokens, o.d_in);
  core::TorchGenerator input_gen(config.seed);  // torch.rand(T, d_in) from the seed
  input_gen.fill_uniform(inputs.embeddings, 0.0f, 1.0f);
  for (int t = 0; t < o.tokens; ++t) inputs.tokens.push_back("t" + std::to_string(t));
  if (const auto problem = core::validate(config, inputs); !problem.empty())
    throw core::ParseError(problem);

  using Clock = std::chrono::steady_clock;
  std::vector<double> ms;
  std::size_t stages = 0;
  for (int k = 0; k <= o.repeat; ++k) {
    const auto start = Clock::now();
    const core::Trace trace = core::run_attention(config, inputs);
    const auto stop = Clock::now();
    stages = trace.stages.size();
    if (k > 0) ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms.size() % 2 ? ms[ms.size() / 2]
                                      : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  std::printf("bench: %s T=%d d_in=%d d_out=%d heads=%d dropout=%g %s, %zu stages kept\n",
              o.variant.c_str(), o.tokens, o.d_in, o.d_out, o.heads, o.dropout,
              o.eval ? "eval" : "training", stages);
  std::printf("runs=%d min_ms=%.3f median_ms=%.3f max_ms=%.3f peak_rss_mb=%.1f\n", o.repeat,
              ms.front(), median, ms.back(), peak_rss_mb());
  std::printf("median_ms=%.3f\n", median);
  return 0;
}

int bad_input(const std::string& message) {
  std::cout.clear();
  std::cerr << "error: " << message << "\n";
  return kExitBadInput;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"attnscope-cli: every stage of the attention mechanism, as numbers", "attnscope-cli"};
  app.set_version_flag("--version", "attnscope-cli " ATTNSCOPE_VERSION);
  app.require_subcommand(1);

  RunOptions run;
  std::string format = "json";
  auto* trace_cmd = app.add_subcommand("trace", "print every stage of one run (JSON by default)");
  add_run_options(*trace_cmd, run);
  trace_cmd->add_option("--format", format, "json (docs/trace-format.md) or text (for people)")
      ->check(CLI::IsMember({"json", "text"}));

  BenchOptions bench;
  auto* bench_cmd = app.add_subcommand("bench", "time full traces at a given size");
  add_bench_options(*bench_cmd, bench);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version (and their kin)
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 says "A subcommand is required" for `attnscope-cli frob`; name the word.
    if (argc > 1 && !app.get_subcommands().size()) {
      const std::string first = argv[1];
      if (!first.empty() && first[0] == '-')
        return bad_input("unknown option '" + first + "' (commands: trace, bench; run attnscope-cli --help)");
      return bad_input("unknown command '" + first + "' (commands: trace, bench; run attnscope-cli --help)");
    }
    std::string what = e.what();
    if (what.empty()) what = "bad arguments";
    return bad_input(what + " (run attnscope-cli --help)");
  }

  try {
    if (bench_cmd->parsed()) return run_bench(bench);
    core::Config config;
    core::Inputs inputs;
    resolve_run(run, config, inputs);
    const core::Trace trace = core::run_attention(config, inputs);
    if (format == "text")
      core::write_trace_text(trace, std::cout);
    else
      core::write_trace_json(trace, std::cout);
    std::cout.flush();
    return std::cout ? 0 : 1;
  } catch (const core::ParseError& e) {
    return bad_input(e.what());
  } catch (const std::bad_alloc&) {
    return bad_input("out of memory: try fewer tokens or smaller dimensions");
  } catch (const std::exception& e) {  // a bug, but still one clear line and no crash
    return bad_input(std::string("unexpected failure: ") + e.what());
  }
}
