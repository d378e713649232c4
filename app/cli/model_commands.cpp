// model_commands.cpp: `attnscope-cli model
// info|list|trace|generate|lens|export|bench|patterns|script|compare`.
#include "model_commands.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "attnscope/analysis/memory.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/formats/files.hpp"
#include "attnscope/formats/pth.hpp"
#include "attnscope/formats/safetensors.hpp"
#include "attnscope/io/io.hpp"
#include "attnscope/model/gpt2_config.hpp"
#include "attnscope/model/gpt2_model.hpp"
#include "attnscope/model/head_patterns.hpp"
#include "attnscope/model/model_script.hpp"
#include "attnscope/model/model_trace.hpp"
#include "attnscope/model/predictions.hpp"
#include "attnscope/model/run_compare.hpp"
#include "attnscope/text/tokenizer.hpp"
#include "family_commands.hpp"
#include "pull_command.hpp"
#include "run_flags/run_flags.hpp"

namespace attnscope::cli {

namespace core = attnscope::core;
namespace fs = std::filesystem;

namespace {

// ---------------------------------------------------------------------------
// info

// `s` as a JSON string literal (names come from the file: quotes, backslashes
// and control characters are escaped; the reader has checked the UTF-8).
std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

void write_tensors_json(const core::SafetensorsFile& file, bool& first, std::ostream& out) {
  for (const core::TensorInfo& t : file.tensors()) {
    out << (first ? "\n    " : ",\n    ") << "{\"name\": " << json_string(t.name)
        << ", \"dtype\": " << json_string(t.dtype) << ", \"shape\": [";
    for (std::size_t k = 0; k < t.shape.size(); ++k) out << (k ? ", " : "") << t.shape[k];
    out << "], \"file\": " << json_string(fs::path(file.source()).filename().string()) << "}";
    first = false;
  }
}

// Prints a GPT-2 checkpoint's config and tensors as JSON: PATH is a folder
// with config.json and model.safetensors (or model.safetensors.index.json and
// its shards), or one .safetensors file (then "config" is null).
// A .pth state_dict's tensors; "config" is the book's GPT_CONFIG beside it
// (or --config) read as a GPT-2 config, or null when there is none.
int run_pth_info(const fs::path& pth, const std::optional<std::string>& config_path) {
  std::optional<core::Gpt2Config> config;
  try {
    const core::ModelFiles files =
        core::locate_model(pth, config_path ? std::optional<fs::path>(*config_path) : std::nullopt);
    config =
        core::parse_book_config(core::read_text_file(files.config.string()), files.config.string())
            .config;
  } catch (const core::ParseError&) {
    if (config_path) throw;  // a config was asked for: say what is wrong with it
  }
  const core::PthFile file = core::PthFile::open(pth);
  std::ostringstream out;
  out << "{\n  \"config\": " << (config ? core::gpt2_config_json(*config) : "null")
      << ",\n  \"dict\": " << json_string(file.dict_key()) << ",\n  \"tensors\": [";
  bool first = true;
  for (const core::PthTensor& t : file.tensors()) {
    out << (first ? "\n    " : ",\n    ") << "{\"name\": " << json_string(t.name)
        << ", \"dtype\": " << json_string(t.dtype) << ", \"shape\": [";
    for (std::size_t k = 0; k < t.shape.size(); ++k) out << (k ? ", " : "") << t.shape[k];
    out << "], \"file\": " << json_string(pth.filename().string()) << "}";
    first = false;
  }
  out << (first ? "]\n}\n" : "\n  ]\n}\n");
  std::cout << out.str();
  std::cout.flush();
  return std::cout ? 0 : 1;
}

bool is_pth_path(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".pth" || e == ".pt";
}

int run_model_info(const std::string& model, const std::optional<std::string>& config_path) {
  std::error_code ec;
  const std::string path = core::resolve_model_path(model).string();  // a repo id: its snapshot
  if (is_pth_path(path)) return run_pth_info(path, config_path);
  if (!config_path && family_model_type(path)) return run_family_info(path);
  std::optional<core::Gpt2Config> config;
  std::vector<core::SafetensorsFile> files;
  if (fs::is_directory(path, ec) && !fs::exists(fs::path(path) / "config.json", ec)) {
    for (const auto& e : fs::directory_iterator(path, ec))
      if (is_pth_path(e.path())) return run_pth_info(e.path(), config_path);
  }
  if (fs::is_directory(path, ec)) {
    const fs::path dir(path);
    if (!fs::exists(dir / "config.json", ec))
      throw core::ParseError(
          path + ": no config.json in this folder (a Hugging Face GPT-2 folder has one)");
    config = core::read_gpt2_config((dir / "config.json").string());
    if (fs::exists(dir / "model.safetensors", ec))
      files.push_back(core::SafetensorsFile::open(dir / "model.safetensors"));
    else if (fs::exists(dir / "model.safetensors.index.json", ec))
      files = core::SafetensorsShards::open(dir / "model.safetensors.index.json").shards();
    else
      throw core::ParseError(
          path + ": no model.safetensors or model.safetensors.index.json in this folder");
  } else {
    files.push_back(core::SafetensorsFile::open(path));
  }
  std::ostringstream out;
  out << "{\n  \"config\": " << (config ? core::gpt2_config_json(*config) : "null")
      << ",\n  \"tensors\": [";
  bool first = true;
  for (const auto& f : files) write_tensors_json(f, first, out);
  out << (first ? "]\n}\n" : "\n  ]\n}\n");
  std::cout << out.str();
  std::cout.flush();
  return std::cout ? 0 : 1;
}

// ---------------------------------------------------------------------------
// list

int run_model_list() {
  std::ostringstream out;
  out << "{\"searched\": [";
  const auto folders = core::model_search_folders();
  for (std::size_t i = 0; i < folders.size(); ++i)
    out << (i ? ", " : "") << json_string(folders[i].string());
  out << "],\n \"models\": [";
  const auto found = core::find_models();
  for (std::size_t i = 0; i < found.size(); ++i)
    out << (i ? ",\n  " : "\n  ") << "{\"name\": " << json_string(found[i].name)
        << ", \"path\": " << json_string(found[i].path.string())
        << ", \"where\": " << json_string(found[i].where) << ", \"bytes\": " << found[i].bytes
        << (found[i].repo.empty() ? std::string()
                                  : ", \"repo\": " + json_string(found[i].repo) +
                                        ", \"revision\": " + json_string(found[i].revision) +
                                        ", \"commit\": " + json_string(found[i].commit))
        << "}";
  out << "]}\n";
  std::cout << out.str();
  std::cout.flush();
  return std::cout ? 0 : 1;
}

// ---------------------------------------------------------------------------
// The text a command runs on, as token ids.

std::vector<int> input_ids(const ModelCommands& c, const core::Gpt2Model& model) {
  return c.model.model_ids(model, c.text);
}

std::shared_ptr<const core::Gpt2Model> load(const ModelCommands& c) {
  return core::Gpt2Model::load(
      c.model.path.value_or(""),
      c.model.config ? std::optional<fs::path>(*c.model.config) : std::nullopt);
}

core::ModelStageSelection selection(const ModelCommands& c) {
  return core::ModelStageSelection{c.layers, c.heads, c.stages};
}

int print(const std::string& text) {
  std::cout << text;
  std::cout.flush();
  return std::cout ? 0 : 1;
}

// ---------------------------------------------------------------------------
// trace, generate, export

int run_model_trace(const ModelCommands& c) {
  const auto model = load(c);
  core::ModelRun run(model, input_ids(c, *model));
  const auto keys = core::select_model_stages(run, selection(c));
  if (c.next_at < -1 || c.next_at >= run.num_tokens())
    throw core::ParseError(
        "--next-at " + std::to_string(c.next_at) + " is not a token of the text: it has " +
        std::to_string(run.num_tokens()) + " tokens, 0.." + std::to_string(run.num_tokens() - 1));
  if (c.format == "text")
    core::write_model_trace_text(run, keys, std::cout, c.next_at);
  else
    core::write_model_trace_json(run, keys, std::cout, c.next_at);
  std::cout.flush();
  return std::cout ? 0 : 1;
}

int run_model_generate(const ModelCommands& c) {
  if (c.tokens < 1) throw core::ParseError("--tokens must be at least 1 (new tokens to generate)");
  const auto model = load(c);
  std::vector<int> ids = input_ids(c, *model);
  const core::Sampling sampling{c.temperature, c.top_k, c.sample_seed};
  const std::vector<int> added = core::generate(model, ids, c.tokens, sampling);
  ids.insert(ids.end(), added.begin(), added.end());
  // Decoded as a whole, with U+FFFD where the bytes are not UTF-8 (the last
  // new token may stop inside a character): the output is valid UTF-8 text
  // and JSON, the text tiktoken's decode gives.
  const std::string text = model->tokenizer().decode_text(ids);
  if (c.generate_format == "text") return print(text + "\n");
  std::string out = "{\"ids\": [";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  out += "], \"new_ids\": [";
  for (std::size_t i = 0; i < added.size(); ++i) out += (i ? ", " : "") + std::to_string(added[i]);
  out += "], \"text\": " + json_string(text);
  char sampled[96];
  std::snprintf(sampled, sizeof sampled,
                ", \"temperature\": %.9g, \"top_k\": %d, \"seed\": %llu}\n", c.temperature, c.top_k,
                static_cast<unsigned long long>(c.sample_seed));
  return print(out + sampled);
}

// ---------------------------------------------------------------------------
// lens

int run_model_lens(const ModelCommands& c) {
  const auto model = load(c);
  core::ModelRun run(model, input_ids(c, *model));
  const int position = c.position < 0 ? run.num_tokens() - 1 : c.position;
  if (c.position < -1 || position >= run.num_tokens())
    throw core::ParseError(
        "--position " + std::to_string(c.position) + " is not a token of the text: it has " +
        std::to_string(run.num_tokens()) + " tokens, 0.." + std::to_string(run.num_tokens() - 1));
  if (c.top < 1) throw core::ParseError("--top must be at least 1");
  const core::LensColumn lens = core::logit_lens(run, position, c.top);
  const int L = run.num_layers();
  std::string out;
  char buf[64];
  if (c.format == "text") {
    out = "logit lens of " + model->name() + " after token " + std::to_string(position) + " (" +
          run.tokens()[static_cast<std::size_t>(position)] +
          "): each residual through ln_f and the LM head\n";
    for (int l = 0; l <= L; ++l) {
      std::snprintf(buf, sizeof buf, "%-12s", core::lens_layer_name(l).c_str());
      out += buf;
      for (const core::NextToken& n : lens.layers[static_cast<std::size_t>(l)]) {
        std::snprintf(buf, sizeof buf, "  %7.3f %% ", 100.0 * n.probability);
        out += buf + n.token;
      }
      out += l == L ? "   <- the model's prediction\n" : "\n";
    }
    return print(out);
  }
  out = "{\"model\": " + json_string(model->name()) +
        ", \"position\": " + std::to_string(position) +
        ", \"token\": " + json_string(run.tokens()[static_cast<std::size_t>(position)]) +
        ",\n \"layers\": [";
  for (int l = 0; l <= L; ++l) {
    out += (l ? ",\n  " : "\n  ") + std::string("{\"layer\": ") + std::to_string(l) +
           ", \"after\": " + json_string(core::lens_layer_name(l)) +
           ", \"final\": " + (l == L ? "true" : "false") + ", \"top\": [";
    const auto& top = lens.layers[static_cast<std::size_t>(l)];
    for (std::size_t i = 0; i < top.size(); ++i) {
      std::snprintf(buf, sizeof buf, "%.9g", top[i].probability);
      out += (i ? ", " : "") + std::string("{\"id\": ") + std::to_string(top[i].id) +
             ", \"token\": " + json_string(top[i].token) + ", \"probability\": " + buf + "}";
    }
    out += "]}";
  }
  return print(out + "\n]}\n");
}

int run_model_export(const ModelCommands& c) {
  const auto model = load(c);
  core::ModelRun run(model, input_ids(c, *model));
  core::ModelStageSelection s = selection(c);
  const bool svg = c.exp_options.format == "svg";
  if (s.stages.empty() && svg) s.stages = {core::stage_id::weights};  // logits: 1 x vocab
  const core::Trace trace = core::model_trace(run, core::select_model_stages(run, s));
  std::vector<const core::Stage*> stages;
  for (const core::Stage& st : trace.stages) stages.push_back(&st);
  return write_stages(trace, stages, c.exp_options);
}

// ---------------------------------------------------------------------------
// script

// The flag's value checked against what the model has, as the other
// commands word it.
void check_index(const char* flag, int value, int count, const char* what) {
  if (value < 0 || value >= count)
    throw core::ParseError(std::string(flag) + " " + std::to_string(value) + " is not a " + what +
                           " of the model: it has " + std::to_string(count) + ", 0.." +
                           std::to_string(count - 1));
}

int run_model_script(const ModelCommands& c) {
  const std::optional<fs::path> config =
      c.model.config ? std::optional<fs::path>(*c.model.config) : std::nullopt;
  const core::ModelFiles files = core::locate_model(c.model.path.value_or(""), config);
  // Refused before the load: a Hugging Face folder may be gigabytes.
  if (const auto why = core::model_script_refusal(files)) throw core::ParseError(*why);
  const auto model = load(c);
  check_index("--layer", c.layer, model->config().n_layer, "layer");
  check_index("--head", c.head, model->config().n_head, "head");
  if (c.top < 1 || c.top > model->config().vocab_size)
    throw core::ParseError("--top must be 1.." + std::to_string(model->config().vocab_size));
  core::ModelScriptRun run;
  run.ids = input_ids(c, *model);
  run.layer = c.layer;
  run.head = c.head;
  run.top = c.top;
  return print(core::model_script(*model, files, std::move(run)));
}

// ---------------------------------------------------------------------------
// patterns

int run_model_patterns(const ModelCommands& c) {
  const auto model = load(c);
  core::ModelRun run(model, input_ids(c, *model));
  return print(core::model_patterns_json(core::model_patterns(run, model, c.induction_n, c.seed),
                                         model->name()));
}

// ---------------------------------------------------------------------------
// bench

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
}

// A T-token text from the vocabulary (a fixed stride through it), for timing.
std::vector<int> bench_ids(int tokens, int vocab) {
  std::vector<int> ids(static_cast<std::size_t>(tokens));
  for (int i = 0; i < tokens; ++i)
    ids[static_cast<std::size_t>(i)] = static_cast<int>((1000LL + 7919LL * i) % vocab);
  return ids;
}

int run_model_bench(const ModelCommands& c) {
  using clock = std::chrono::steady_clock;
  core::keep_freed_memory_for_reuse();  // as the app does: a rerun reuses warm pages
  const auto t0 = clock::now();
  const auto model = load(c);
  const double load_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  const core::Gpt2Config& cfg = model->config();
  if (c.tokens < 1 || c.tokens > cfg.n_positions)
    throw core::ParseError("--tokens must be 1.." + std::to_string(cfg.n_positions) +
                           " (the model's n_positions)");
  if (c.append && c.tokens < 2) throw core::ParseError("--append needs --tokens 2 or more");
  if (c.repeat < 1) throw core::ParseError("--repeat must be at least 1");
  const std::vector<int> ids = bench_ids(c.tokens, cfg.vocab_size);
  const std::vector<int> prefix(ids.begin(), ids.end() - 1);
  core::ModelRun::Options keep_all;
  keep_all.cache_bytes = static_cast<std::size_t>(-1);  // every head's weights kept
  std::vector<double> ms, full_ms;
  std::size_t kept = 0;
  for (int r = 0; r <= c.repeat; ++r) {  // run 0 warms up
    if (c.append) {  // the full forward of all T tokens too, interleaved, for the ratio
      const auto full_start = clock::now();
      { core::ModelRun full(model, ids, keep_all); }
      if (r)
        full_ms.push_back(
            std::chrono::duration<double, std::milli>(clock::now() - full_start).count());
      core::ModelRun run(model, prefix, keep_all);
      const auto start = clock::now();
      run.append(ids.back());
      if (r) ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - start).count());
      kept = run.cached_bytes();
    } else {
      const auto start = clock::now();
      core::ModelRun run(model, ids, keep_all);
      if (r) ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - start).count());
      kept = run.cached_bytes();
    }
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  const double T = c.tokens, d = cfg.n_embd, inner = cfg.n_inner, L = cfg.n_layer;
  const double rows = c.append ? 1.0 : T;
  // Multiply-adds x 2: the projections and MLP per row, the causal attention
  // products (about T/2 keys per row, twice: scores and context), the logits.
  const double flops = 2.0 * L * rows * (d * 3 * d + d * d + 2 * d * inner) +
                       2.0 * L * rows * (c.append ? T : (T + 1) / 2) * d * 2 +
                       2.0 * d * cfg.vocab_size;
  std::printf("model=%s layers=%d heads=%d d=%d tokens=%d %s load_ms=%.1f\n", model->name().c_str(),
              cfg.n_layer, cfg.n_head, cfg.n_embd, c.tokens,
              c.append ? "append of the last token to the others" : "full forward", load_ms);
  std::printf(
      "runs=%d min_ms=%.3f median_ms=%.3f max_ms=%.3f gflop=%.2f gflops=%.1f "
      "attention_kept_mb=%.1f peak_rss_mb=%.1f\n",
      c.repeat, ms.front(), median, ms.back(), flops / 1e9, flops / 1e6 / median,
      static_cast<double>(kept) / (1 << 20), peak_rss_mb());
  if (c.append) {
    // An append is bound by memory, not FMAs: every weight is read once
    // for one row. Its floor is reading them, timed now.
    std::sort(full_ms.begin(), full_ms.end());
    const double full = full_ms[full_ms.size() / 2];
    const core::WeightStream stream = core::stream_weights(*model);
    std::printf(
        "full_forward_ms=%.3f append_over_full=%.3f weights_mb=%.1f read_weights_ms=%.3f "
        "read_gbs=%.1f median_over_read=%.3g read_over_full=%.3f\n",
        full, median / full, stream.bytes / (1 << 20), stream.ms, stream.bytes / stream.ms / 1e6,
        median / stream.ms, stream.ms / full);
  } else {
    // The floor: the FLOPs at this machine's FMA rate, measured now (after the runs).
    const double fma = core::machine_fma_gflops(0.3);
    const double floor_ms = fma > 0 ? flops / 1e6 / fma : 0.0;
    std::printf("fma_gflops=%.1f floor_ms=%.3f median_over_floor=%.2f\n", fma, floor_ms,
                floor_ms > 0 ? median / floor_ms : 0.0);
  }
  std::printf("median_ms=%.3f\n", median);
  return 0;
}

// ---------------------------------------------------------------------------
// compare

// A (T, T) map as JSON rows, each value as %.9g (a float32 read back exactly).
std::string matrix_json(const core::RowMatrix& m) {
  std::string out = "[";
  char buf[32];
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    out += r ? ",\n   [" : "\n   [";
    for (Eigen::Index c = 0; c < m.cols(); ++c) {
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(m(r, c)));
      out += (c ? ", " : "") + std::string(buf);
    }
    out += "]";
  }
  return out + "]";
}

std::string head_json(const core::HeadDifference& h) {
  char buf[200];
  std::snprintf(buf, sizeof buf,
                "{\"layer\": %d, \"head\": %d, \"mean_abs\": %.17g, \"max_abs\": %.9g, "
                "\"max_query\": %d, \"max_key\": %d}",
                h.layer, h.head, h.mean_abs, static_cast<double>(h.max_abs), h.max_query,
                h.max_key);
  return buf;
}

std::string compare_text(const core::RunDifference& d, const std::string& a, const std::string& b) {
  std::string out = "A: " + a + "\nB: " + b + "\n" + std::to_string(d.layers) + " layers x " +
                    std::to_string(d.heads) + " heads, " + std::to_string(d.tokens) +
                    " tokens; mean over the cells a query sees (key <= query)\n" +
                    "layer  head   mean|B-A|    max|B-A|  at (query, key)\n";
  char buf[128];
  for (const core::HeadDifference& h : d.per_head) {
    std::snprintf(buf, sizeof buf, "%5d %5d %11.6g %11.6g  (%d, %d)\n", h.layer, h.head, h.mean_abs,
                  static_cast<double>(h.max_abs), h.max_query, h.max_key);
    out += buf;
  }
  const core::HeadDifference& most = d.most_changed();
  return out + "most changed: layer " + std::to_string(most.layer) + ", head " +
         std::to_string(most.head) + "\n";
}

// Checkpoint B on A's token ids, every chosen head compared (core::compare_runs).
int run_model_compare(const ModelCompareFlags& f) {
  const auto a = core::Gpt2Model::load(
      f.model.path.value_or(""),
      f.model.config ? std::optional<fs::path>(*f.model.config) : std::nullopt);
  const auto b = core::Gpt2Model::load(
      f.b_path, f.b_config ? std::optional<fs::path>(*f.b_config) : std::nullopt);
  const std::string refusal =
      core::compare_refusal(a->config(), b->config(), f.model.path.value_or(""), f.b_path);
  if (!refusal.empty()) throw core::ParseError("cannot compare: " + refusal);
  const std::vector<int> ids = f.model.model_ids(*a, f.text);
  core::ModelRun run_a(a, ids);
  std::optional<core::ModelRun> run_b;
  try {
    run_b.emplace(b, ids);
  } catch (const std::invalid_argument& e) {
    throw core::ParseError("B (" + f.b_path + ") cannot read A's tokens: " + e.what());
  }
  std::vector<int> layers, heads;
  if (f.layer) layers.push_back(*f.layer);
  if (f.head) heads.push_back(*f.head);
  const core::RunDifference d = core::compare_runs(run_a, *run_b, layers, heads);
  std::error_code ec;
  const bool same = fs::equivalent(core::resolve_model_path(f.model.path.value_or("")),
                                   core::resolve_model_path(f.b_path), ec) &&
                    !ec;
  if (f.format == "text") return print(compare_text(d, a->name(), b->name()));
  std::string out = "{\"a\": " + json_string(a->name()) + ", \"b\": " + json_string(b->name()) +
                    ", \"same_file\": " + (same ? "true" : "false") +
                    ",\n \"layers\": " + std::to_string(d.layers) +
                    ", \"heads\": " + std::to_string(d.heads) +
                    ", \"tokens\": " + std::to_string(d.tokens) + ", \"ids\": [";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  out += "],\n \"mean_over\": \"key <= query\",\n \"per_head\": [";
  for (std::size_t i = 0; i < d.per_head.size(); ++i)
    out += (i ? ",\n  " : "\n  ") + head_json(d.per_head[i]);
  out += "],\n \"most_changed\": " + head_json(d.most_changed());
  if (f.layer && f.head) {
    const core::StageKey key{*f.layer, *f.head, core::stage_id::weights};
    const core::RowMatrix wa = *run_a.stage(key), wb = *run_b->stage(key);
    out += ",\n \"weights_a\": " + matrix_json(wa) + ",\n \"weights_b\": " + matrix_json(wb) +
           ",\n \"difference\": " + matrix_json(wb - wa);
  }
  return print(out + "}\n");
}

void add_model_compare(CLI::App& model, ModelCompareFlags& f) {
  f.cmd = model.add_subcommand(
      "compare",
      "two checkpoints of one shape on the same tokens: each head's mean and largest |B - A| of "
      "the attention weights (JSON)");
  run_flags::add_model_flags(*f.cmd, f.model, run_flags::Program::CliModel, &f.text);
  f.cmd->add_option("B", f.b_path, "checkpoint B, with as many layers and heads as MODEL (A)")
      ->required();
  f.cmd->add_option("--config-b", f.b_config, "B's config file (default: beside its weights)");
  f.cmd->add_option("--layer", f.layer, "only this layer (default: every one)");
  f.cmd->add_option("--head", f.head,
                    "only this head (default: every one); with --layer the JSON also holds both "
                    "weight matrices and their difference");
  f.cmd->add_option("--format", f.format, "json or text")->check(CLI::IsMember({"json", "text"}));
}

void add_text_options(CLI::App& cmd, ModelCommands& c) {
  run_flags::add_model_flags(cmd, c.model, run_flags::Program::CliModel, &c.text);
}

void add_selection_options(CLI::App& cmd, ModelCommands& c) {
  cmd.add_option("--layers", c.layers, "only these layers, e.g. 0,5 (default: all)")
      ->delimiter(',');
  cmd.add_option("--heads", c.heads, "only these heads, e.g. 0,3 (default: all)")->delimiter(',');
  cmd.add_option("--stages", c.stages,
                 "stage ids, e.g. weights,context,logits (default: weights,logits); see "
                 "docs/trace-format.md")
      ->delimiter(',');
}

}  // namespace

void add_model_commands(CLI::App& app, ModelCommands& c) {
  c.cmd = app.add_subcommand(
      "model",
      "GPT-2-family models (Hugging Face folders, .safetensors, the book's .pth); info, trace, "
      "generate and bench also Llama, Mistral, Qwen2/3 and Gemma 3 folders");
  c.cmd->require_subcommand(1);
  c.info = c.cmd->add_subcommand(
      "info", "print a checkpoint's config and tensors (name, dtype, shape) as JSON");
  c.info
      ->add_option("PATH", c.model.path,
                   "a folder with config.json + model.safetensors, a .safetensors file, or the "
                   "book's .pth")
      ->required();
  c.info->add_option("--config", c.model.config, "the book's GPT_CONFIG as JSON, for a .pth");
  c.list = c.cmd->add_subcommand(
      "list", "list the models in the Hugging Face cache and attnscope's models folder (JSON)");
  c.pull = c.cmd->add_subcommand(
      "pull",
      "download a model from the Hugging Face Hub into its cache (config, safetensors, "
      "tokenizer); prints the snapshot folder, which --model and MODEL take");
  c.pull->add_option("REPO", c.pull_ref, "org/name[@revision], e.g. openai-community/gpt2")
      ->required();
  c.pull->add_option("--endpoint", c.endpoint,
                     "the Hub's address (default: $HF_ENDPOINT, else https://huggingface.co)");
  c.trace = c.cmd->add_subcommand(
      "trace", "run a text through a model; print attention (every layer and head) as JSON");
  add_text_options(*c.trace, c);
  add_selection_options(*c.trace, c);
  c.trace->add_option("--format", c.format, "json (docs/trace-format.md) or text (for people)")
      ->check(CLI::IsMember({"json", "text"}));
  c.trace->add_option("--next-at", c.next_at,
                      "the next tokens predicted after this token (0-based; default: the last)");
  c.generate = c.cmd->add_subcommand(
      "generate", "continue a text as the book's generate() does (greedy by default)");
  add_text_options(*c.generate, c);
  c.generate->add_option("--tokens", c.tokens, "how many tokens to add")->required();
  c.generate->add_option("--format", c.generate_format, "text (the whole text) or json (ids)")
      ->check(CLI::IsMember({"text", "json"}));
  c.generate
      ->add_option("--temperature", c.temperature,
                   "0: greedy (default); above 0: sample as the book's generate() does")
      ->check(CLI::NonNegativeNumber);
  c.generate->add_option("--top-k", c.top_k, "keep only the K most likely tokens (0: all)")
      ->check(CLI::NonNegativeNumber);
  c.generate
      ->add_option("--seed", c.sample_seed,
                   "torch.manual_seed before sampling (the book's 123 by default)")
      ->capture_default_str();
  c.lens = c.cmd->add_subcommand(
      "lens", "what each layer would predict at one position (the logit lens), top tokens");
  add_text_options(*c.lens, c);
  c.lens->add_option("--position", c.position,
                     "the token whose next token is read (0-based; default: the last)");
  c.lens->add_option("--top", c.top, "tokens per layer")->capture_default_str();
  c.lens->add_option("--format", c.format, "json or text")->check(CLI::IsMember({"json", "text"}));
  c.exp = c.cmd->add_subcommand("export", "write a model run's stages as files");
  add_text_options(*c.exp, c);
  add_selection_options(*c.exp, c);
  c.exp->add_option("--format", c.exp_options.format, "svg, csv, npy or json")
      ->required()
      ->check(CLI::IsMember({"svg", "csv", "npy", "json"}));
  c.exp
      ->add_option("--out", c.exp_options.out_dir,
                   "folder to write the files into (created, with its parents, when missing)")
      ->required();
  run_flags::add_figure_flags(*c.exp, c.exp_options.figure);  // svg: as `export` has them
  c.bench = c.cmd->add_subcommand(
      "bench",
      "time the full forward (every head's weights kept, last logits); last line "
      "median_ms=...");
  c.bench->add_option("MODEL", c.model.path, "a model folder or file")->required();
  c.bench->add_option("--config", c.model.config, "config file (default: beside the weights)");
  c.bench->add_option("--tokens", c.tokens, "T, the number of tokens")->required();
  c.bench->add_option("--repeat", c.repeat, "timed runs after one warm-up")->capture_default_str();
  c.bench->add_flag("--append", c.append,
                    "time appending the T-th token to a run of T - 1 (cached keys and values)");
  c.patterns = c.cmd->add_subcommand(
      "patterns",
      "score every head (previous token, first token, self, entropy, induction) as JSON");
  add_text_options(*c.patterns, c);
  c.patterns
      ->add_option("--induction-n", c.induction_n,
                   "random tokens repeated twice for the induction score (capped to fit the "
                   "model's n_positions)")
      ->capture_default_str();
  c.patterns->add_option("--seed", c.seed, "seed of the random tokens")->capture_default_str();
  c.script = c.cmd->add_subcommand(
      "script",
      "print the run as a PyTorch script (the book's GPTModel loading a .pth) that prints one "
      "head's weights and the next tokens");
  add_text_options(*c.script, c);
  c.script->add_option("--layer", c.layer, "the layer whose head prints (0-based)")
      ->capture_default_str();
  c.script->add_option("--head", c.head, "the head whose weights print (0-based)")
      ->capture_default_str();
  c.script->add_option("--top", c.top, "next tokens printed")->capture_default_str();
  add_model_compare(*c.cmd, c.compare);
}

// MODEL when it is a family folder (its config.json's model_type is not
// GPT-2's) and no --config reads it otherwise.
std::optional<fs::path> family_path(const ModelCommands& c) {
  if (c.model.config || !c.model.path) return std::nullopt;
  std::error_code ec;
  const fs::path path = core::resolve_model_path(*c.model.path);
  if (!fs::exists(path, ec) || !family_model_type(path)) return std::nullopt;
  return path;
}

std::optional<int> run_model_commands(const ModelCommands& c) {
  try {
    const bool family_command = c.trace->parsed() || c.generate->parsed() || c.bench->parsed();
    const bool gpt2_only =
        c.lens->parsed() || c.exp->parsed() || c.patterns->parsed() || c.script->parsed();
    if (const auto family = family_command || gpt2_only ? family_path(c) : std::nullopt) {
      if (c.trace->parsed()) return run_family_trace(c, *family);
      if (c.generate->parsed()) return run_family_generate(c, *family);
      if (c.bench->parsed()) return run_family_bench(c, *family);
      throw core::ParseError(family->string() + " is a " + *family_model_type(*family) +
                             " model: `model " + c.cmd->get_subcommands().front()->get_name() +
                             "` reads GPT-2 models only; model info, trace, generate and bench "
                             "read this one");
    }
    if (c.info->parsed()) return run_model_info(c.model.path.value_or(""), c.model.config);
    if (c.list->parsed()) return run_model_list();
    if (c.pull->parsed()) return run_model_pull(c.pull_ref, c.endpoint);
    if (c.trace->parsed()) return run_model_trace(c);
    if (c.generate->parsed()) return run_model_generate(c);
    if (c.lens->parsed()) return run_model_lens(c);
    if (c.exp->parsed()) return run_model_export(c);
    if (c.bench->parsed()) return run_model_bench(c);
    if (c.patterns->parsed()) return run_model_patterns(c);
    if (c.script->parsed()) return run_model_script(c);
    if (c.compare.cmd->parsed()) return run_model_compare(c.compare);
  } catch (const std::invalid_argument& e) {  // the engine's refusals of a run
    throw core::ParseError(e.what());
  }
  return std::nullopt;
}

}  // namespace attnscope::cli
