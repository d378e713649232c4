// attnscope-cli: the engine on the command line, no window, no GL.
//
//   attnscope-cli trace [--config FILE|-] [--preset NAME] [run flags] [--format json|text]
//
// Every bad input ends with exit code 2, nothing on stdout and one line on
// stderr that starts with "error: " and names the problem.
#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "attnscope/attention.hpp"
#include "attnscope/io.hpp"

namespace core = attnscope::core;

namespace {

constexpr int kExitBadInput = 2;

// The flags that describe one run; each overrides the config file's field.
struct RunOptions {
  std::string config_path;
  std::optional<std::string> preset;
  std::optional<std::string> variant;
  std::optional<int> d_out;
  std::optional<int> num_heads;
  std::optional<double> dropout;
  std::optional<std::string> seed;  // parsed by parse_seed: CLI11 would wrap "-1"
  bool qkv_bias = false;
  bool eval = false;
};

void add_run_options(CLI::App& cmd, RunOptions& o) {
  cmd.add_option("--config", o.config_path,
                 "JSON config file (- reads standard input); see docs/trace-format.md");
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
  if (!spec.preset && !spec.embeddings) spec.preset = "book";
  core::resolve(spec, config, inputs);
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

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version (and their kin)
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    if (what.empty()) what = "bad arguments";
    return bad_input(what + " (run attnscope-cli --help)");
  }

  try {
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
