// family_commands.cpp: `attnscope-cli model info|trace|generate|bench` on
// the families' folders (Llama, Mistral, Qwen2, Qwen3, Gemma 3).
#include "family_commands.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "attnscope/analysis/memory.hpp"
#include "attnscope/base/errors.hpp"
#include "attnscope/base/stages.hpp"
#include "attnscope/formats/files.hpp"
#include "attnscope/formats/safetensors.hpp"
#include "attnscope/model/family_config.hpp"
#include "attnscope/model/family_model.hpp"
#include "attnscope/model/predictions.hpp"
#include "attnscope/text/hf_tokenizer.hpp"
#include "attnscope/text/tokenizer.hpp"

namespace attnscope::cli {

namespace core = attnscope::core;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// The config's numbers as a JSON object (the "config" of info and trace).
json config_json(const core::FamilyConfig& c) {
  json sliding = json::array();
  for (std::size_t l = 0; l < c.sliding.size(); ++l)
    if (c.sliding[l]) sliding.push_back(static_cast<int>(l));
  json scaling = nullptr;
  if (c.rope_scaling.enabled)
    scaling = {
        {"rope_type", "llama3"},
        {"factor", c.rope_scaling.factor},
        {"low_freq_factor", c.rope_scaling.low_freq_factor},
        {"high_freq_factor", c.rope_scaling.high_freq_factor},
        {"original_max_position_embeddings", c.rope_scaling.original_max_position_embeddings}};
  return {{"family", std::string(core::model_family_name(c.family))},
          {"layers", c.num_hidden_layers},
          {"heads", c.num_attention_heads},
          {"kv_heads", c.num_key_value_heads},
          {"head_dim", c.head_dim},
          {"hidden", c.hidden_size},
          {"intermediate", c.intermediate_size},
          {"vocab", c.vocab_size},
          {"context", c.max_position_embeddings},  // not a stage id
          {"sliding_window",
           c.sliding_window > 0 && !sliding.empty() ? json(c.sliding_window) : json(nullptr)},
          {"sliding_layers", sliding},
          {"rope_theta", c.rope_theta},
          {"rope_local_theta", c.gemma ? json(c.rope_local_base_freq) : json(nullptr)},
          {"rope_scaling", scaling},
          {"qk_norm", c.qk_norm},
          {"tied_embeddings", c.tie_word_embeddings},
          {"activation", c.activation == core::FamilyActivation::Silu ? "silu" : "gelu_tanh"},
          {"final_logit_softcapping",
           c.final_logit_softcapping > 0 ? json(c.final_logit_softcapping) : json(nullptr)}};
}

std::vector<core::SafetensorsFile> weight_files(const fs::path& path) {
  std::error_code ec;
  std::vector<core::SafetensorsFile> files;
  if (!fs::is_directory(path, ec)) {
    files.push_back(core::SafetensorsFile::open(path));
  } else if (fs::exists(path / "model.safetensors", ec)) {
    files.push_back(core::SafetensorsFile::open(path / "model.safetensors"));
  } else if (fs::exists(path / "model.safetensors.index.json", ec)) {
    files = core::SafetensorsShards::open(path / "model.safetensors.index.json").shards();
  } else {
    throw core::ParseError(path.string() +
                           ": no model.safetensors or model.safetensors.index.json in this folder");
  }
  return files;
}

int print(const std::string& text) {
  std::cout << text;
  std::cout.flush();
  return std::cout ? 0 : 1;
}

std::string number(double v) {
  if (!std::isfinite(v)) return v > 0 ? "\"inf\"" : (v < 0 ? "\"-inf\"" : "\"nan\"");
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// Rows of a matrix as JSON, each value as %.9g (a float32 read back exactly).
void append_rows(std::string& out, const core::RowMatrix& m) {
  out += "[";
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    out += r ? ", [" : "[";
    for (Eigen::Index k = 0; k < m.cols(); ++k)
      out += (k ? ", " : "") + number(static_cast<double>(m(r, k)));
    out += "]";
  }
  out += "]";
}

struct Loaded {
  std::shared_ptr<const core::FamilyModel> model;
  core::HfTokenizer tokenizer;
};

// The config's refusals come first, then the missing tokenizer, then the weights.
Loaded load_with_tokenizer(const fs::path& path) {
  (void)core::read_family_config((core::model_folder(path) / "config.json").string());
  core::HfTokenizer tokenizer =
      core::HfTokenizer::load(core::family_tokenizer_path(core::model_folder(path)).string());
  return Loaded{core::FamilyModel::load(path), std::move(tokenizer)};
}

std::vector<int> parse_id_list(const std::string& text, int vocab) {
  std::vector<int> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    int id = -1;
    const auto [end, err] = std::from_chars(item.data(), item.data() + item.size(), id);
    if (item.empty() || err != std::errc() || end != item.data() + item.size() || id < 0 ||
        id >= vocab)
      throw core::ParseError("--ids: \"" + item + "\" is not a token id of the model (0.." +
                             std::to_string(vocab - 1) + ")");
    out.push_back(id);
    at = comma + 1;
  }
  return out;
}

// The ids the command reads: --ids, or the text through the folder's
// tokenizer (special tokens and its BOS rule), at most the model's context.
std::vector<int> family_ids(const ModelCommands& c, const core::FamilyConfig& cfg,
                            const core::HfTokenizer& tokenizer) {
  const auto& t = c.text;
  const int given = t.text.has_value() + t.text_file.has_value() + c.model.ids.has_value();
  if (given != 1)
    throw core::ParseError(
        "give the text with exactly one of --text TEXT, --text-file FILE and --ids 1,2,3");
  std::vector<int> ids;
  if (c.model.ids) {
    ids = parse_id_list(*c.model.ids, cfg.vocab_size);
  } else {
    for (const core::Token& token : tokenizer.encode(t.read())) ids.push_back(token.id);
  }
  for (int id : ids)
    if (id >= cfg.vocab_size)
      throw core::ParseError("the tokenizer gives id " + std::to_string(id) +
                             ", outside the model's vocabulary of " +
                             std::to_string(cfg.vocab_size));
  if (ids.empty()) throw core::ParseError("the text has no tokens: give some text");
  const std::size_t limit =
      static_cast<std::size_t>(std::min(cfg.max_position_embeddings, core::FamilyRun::kMaxTokens));
  if (ids.size() > limit) {
    if (!c.model.keep_last)
      throw core::ParseError("the text is " + std::to_string(ids.size()) +
                             " tokens but the model reads at most " + std::to_string(limit) +
                             "; shorten it, or pass --keep-last to keep its last " +
                             std::to_string(limit) + " tokens");
    ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(limit));
  }
  return ids;
}

// Softmax of one row, in double.
std::vector<double> probabilities(const core::RowMatrix& logits, Eigen::Index row) {
  const double top = static_cast<double>(logits.row(row).maxCoeff());
  std::vector<double> p(static_cast<std::size_t>(logits.cols()));
  double sum = 0;
  for (Eigen::Index k = 0; k < logits.cols(); ++k)
    sum += p[static_cast<std::size_t>(k)] = std::exp(static_cast<double>(logits(row, k)) - top);
  for (double& v : p) v /= sum;
  return p;
}

// A token's bytes; none for an id of the model the tokenizer does not have
// (configs round vocab_size up past the tokenizer's last id).
std::string bytes_of(const core::HfTokenizer& tokenizer, int id) {
  if (id < 0 || static_cast<std::size_t>(id) >= tokenizer.vocab_size()) return {};
  try {
    return tokenizer.token_bytes(id);
  } catch (const core::ParseError&) {
    return {};
  }
}

std::string token_text(const core::HfTokenizer& tokenizer, int id) {
  return core::printable_token(bytes_of(tokenizer, id));
}

const std::set<std::string>& family_stage_ids() {
  static const std::set<std::string> ids = {
      core::stage_id::weights,     core::stage_id::logits,          core::stage_id::queries,
      core::stage_id::keys,        core::stage_id::values,          core::stage_id::queries_normed,
      core::stage_id::keys_normed, core::stage_id::queries_rotated, core::stage_id::keys_rotated,
      core::stage_id::group_keys,  core::stage_id::group_values,    core::stage_id::window_mask};
  return ids;
}

std::string stage_head(const std::string& id, int layer, int head, const core::RowMatrix& m) {
  std::string out = "{\"id\": \"" + id + "\", \"layer\": " + std::to_string(layer) +
                    ", \"head\": " + std::to_string(head) + ", \"shape\": [" +
                    std::to_string(m.rows()) + ", " + std::to_string(m.cols()) + "], \"data\": ";
  append_rows(out, m);
  return out + "}";
}

// A stage for people: its name and shape, and its values up to 16 x 16.
std::string stage_text(const std::string& id, int layer, int head, const core::RowMatrix& m) {
  constexpr Eigen::Index kShownCells = 16;
  std::string out = "\n" + id + (layer >= 0 ? " layer " + std::to_string(layer) : "") +
                    (head >= 0 ? " head " + std::to_string(head) : "") + " (" +
                    std::to_string(m.rows()) + " x " + std::to_string(m.cols()) + ")";
  char buf[64];
  if (m.rows() > kShownCells || m.cols() > kShownCells) {
    std::snprintf(buf, sizeof buf, ": min %.4f, max %.4f\n", static_cast<double>(m.minCoeff()),
                  static_cast<double>(m.maxCoeff()));
    return out + buf;
  }
  out += "\n";
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    for (Eigen::Index k = 0; k < m.cols(); ++k) {
      std::snprintf(buf, sizeof buf, " %9.4f", static_cast<double>(m(r, k)));
      out += buf;
    }
    out += "\n";
  }
  return out;
}

// stage_head (JSON) or stage_text.
using StageWriter = std::string (*)(const std::string&, int, int, const core::RowMatrix&);

// One layer's chosen stages, each written by `stage_head` and appended to `out`.
void layer_stages_out(const core::FamilyRun& run, int layer, const std::vector<int>& heads,
                      const std::set<std::string>& wanted, StageWriter stage_head,
                      std::vector<std::string>& out) {
  const core::FamilyConfig& cfg = run.model().config();
  const core::FamilyLayerStages s = run.layer_stages(layer);
  const int hd = cfg.head_dim;
  auto cols = [&](const core::RowMatrix& stage, int index) {
    return core::FamilyRun::head_columns(stage, index, hd);
  };
  if (wanted.count(core::stage_id::window_mask) && s.sliding) {
    // The trace format's mask: 1 where query i may not see key j.
    const core::RowMatrix seen = run.window_mask(layer);
    const core::RowMatrix masked = core::RowMatrix::Ones(seen.rows(), seen.cols()) - seen;
    out.push_back(stage_head(core::stage_id::window_mask, layer, -1, masked));
  }
  for (int h : heads) {
    const int g = run.kv_group(h);
    if (wanted.count(core::stage_id::queries))
      out.push_back(stage_head(core::stage_id::queries, layer, h, cols(s.queries, h)));
    if (wanted.count(core::stage_id::keys))
      out.push_back(stage_head(core::stage_id::keys, layer, h, cols(s.keys, g)));
    if (wanted.count(core::stage_id::values))
      out.push_back(stage_head(core::stage_id::values, layer, h, cols(s.values, g)));
    if (wanted.count(core::stage_id::queries_normed) && s.queries_normed.size())
      out.push_back(
          stage_head(core::stage_id::queries_normed, layer, h, cols(s.queries_normed, h)));
    if (wanted.count(core::stage_id::keys_normed) && s.keys_normed.size())
      out.push_back(stage_head(core::stage_id::keys_normed, layer, h, cols(s.keys_normed, g)));
    if (wanted.count(core::stage_id::queries_rotated))
      out.push_back(
          stage_head(core::stage_id::queries_rotated, layer, h, cols(s.queries_rotated, h)));
    if (wanted.count(core::stage_id::keys_rotated))
      out.push_back(stage_head(core::stage_id::keys_rotated, layer, h, cols(s.keys_rotated, g)));
    if (wanted.count(core::stage_id::weights))
      out.push_back(stage_head(core::stage_id::weights, layer, h, run.head_weights(s, h)));
  }
  for (int g = 0; g < cfg.num_key_value_heads; ++g) {
    if (wanted.count(core::stage_id::group_keys))
      out.push_back(stage_head(core::stage_id::group_keys, layer, g, cols(s.keys_rotated, g)));
    if (wanted.count(core::stage_id::group_values))
      out.push_back(stage_head(core::stage_id::group_values, layer, g, cols(s.values, g)));
  }
}

std::vector<int> checked_indices(const std::vector<int>& given, int count, const char* flag) {
  std::vector<int> out = given;
  if (out.empty())
    for (int i = 0; i < count; ++i) out.push_back(i);
  for (int i : out)
    if (i < 0 || i >= count)
      throw core::ParseError(std::string(flag) + " " + std::to_string(i) +
                             " is not in the model: it has 0.." + std::to_string(count - 1));
  return out;
}

std::set<std::string> chosen_stages(const std::vector<std::string>& given) {
  std::set<std::string> wanted;
  if (given.empty()) return {core::stage_id::weights, core::stage_id::logits};
  for (const std::string& id : given) {
    if (!family_stage_ids().count(id)) {
      std::string known;
      for (const std::string& k : family_stage_ids()) known += (known.empty() ? "" : ", ") + k;
      throw core::ParseError("--stages: \"" + id +
                             "\" is not a stage of a family model's trace; it has " + known);
    }
    wanted.insert(id);
  }
  return wanted;
}

// The ten most likely tokens after `position` (most likely first, then the
// lower id) with their probabilities.
std::vector<std::pair<int, double>> next_tokens(const core::FamilyRun& run, int position) {
  // The logits' rows are the last positions (all of them, or the last one).
  const Eigen::Index row = position - (run.num_tokens() - run.logits().rows());
  const std::vector<double> p = probabilities(run.logits(), row);
  std::vector<int> order(p.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  const std::size_t top = std::min<std::size_t>(10, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(top), order.end(),
                    [&](int a, int b) {
                      const auto ua = static_cast<std::size_t>(a), ub = static_cast<std::size_t>(b);
                      return p[ua] > p[ub] || (p[ua] == p[ub] && a < b);
                    });
  std::vector<std::pair<int, double>> out;
  for (std::size_t i = 0; i < top; ++i)
    out.emplace_back(order[i], p[static_cast<std::size_t>(order[i])]);
  return out;
}

// The cross-entropy of each next token of the text.
std::vector<double> token_losses(const core::FamilyRun& run, const std::vector<int>& ids) {
  std::vector<double> out;
  if (run.logits().rows() != run.num_tokens()) return out;  // only the last position's kept
  for (std::size_t i = 0; i + 1 < ids.size(); ++i) {
    const std::vector<double> q = probabilities(run.logits(), static_cast<Eigen::Index>(i));
    out.push_back(-std::log(q[static_cast<std::size_t>(ids[i + 1])]));
  }
  return out;
}

double mean_of(const std::vector<double>& v) {
  double total = 0;
  for (double x : v) total += x;
  return total / static_cast<double>(v.size());
}

// The next tokens and the text's loss, closing the trace's JSON.
std::string trace_tail(const core::FamilyRun& run, const core::HfTokenizer& tokenizer,
                       const std::vector<int>& ids, int position) {
  std::string out = "],\n \"next_token\": [";
  bool first = true;
  for (const auto& [id, p] : next_tokens(run, position)) {
    out += std::string(first ? "" : ", ") + "{\"id\": " + std::to_string(id) +
           ", \"token\": " + json(token_text(tokenizer, id)).dump() +
           ", \"probability\": " + number(p) + "}";
    first = false;
  }
  out += "],\n \"next_token_position\": " + std::to_string(position) +
         ",\n \"loss\": {\"per_token\": [";
  const std::vector<double> losses = token_losses(run, ids);
  for (std::size_t i = 0; i < losses.size(); ++i) out += (i ? ", " : "") + number(losses[i]);
  if (losses.empty()) return out + "], \"mean\": null, \"perplexity\": null}}\n";
  const double mean = mean_of(losses);
  return out + "], \"mean\": " + number(mean) + ", \"perplexity\": " + number(std::exp(mean)) +
         "}}\n";
}

// The trace for people: tokens with ids, the next tokens, the loss, the stages.
int trace_text(const core::FamilyRun& run, const core::HfTokenizer& tokenizer,
               const std::vector<int>& ids, const std::vector<int>& layers,
               const std::vector<int>& heads, const std::set<std::string>& wanted, int position,
               const std::string& name) {
  const core::FamilyConfig& cfg = run.model().config();
  std::string out = "model " + name + " (" + std::string(core::model_family_name(cfg.family)) +
                    "): " + std::to_string(cfg.num_hidden_layers) + " layers x " +
                    std::to_string(cfg.num_attention_heads) + " heads (" +
                    std::to_string(cfg.num_key_value_heads) + " K/V heads), " +
                    std::to_string(ids.size()) + " tokens\n";
  char buf[64];
  for (std::size_t i = 0; i < ids.size(); ++i) {
    std::snprintf(buf, sizeof buf, "  %4zu  %6d  ", i, ids[i]);
    out += buf + token_text(tokenizer, ids[i]) + "\n";
  }
  out += "next token after token " + std::to_string(position) + " (most likely first):\n";
  for (const auto& [id, p] : next_tokens(run, position)) {
    std::snprintf(buf, sizeof buf, "  %6.2f %%  %6d  ", 100.0 * p, id);
    out += buf + token_text(tokenizer, id) + "\n";
  }
  const std::vector<double> losses = token_losses(run, ids);
  if (losses.empty()) {
    out += "loss: none (one token has no next token to predict)\n";
  } else {
    std::snprintf(buf, sizeof buf, "loss %.4f (perplexity %.2f)", mean_of(losses),
                  std::exp(mean_of(losses)));
    out += std::string(buf) + ": the mean cross-entropy of each next token of the text\n";
  }
  std::cout << out;
  for (int l : layers) {
    std::vector<std::string> stages;
    layer_stages_out(run, l, heads, wanted, stage_text, stages);
    for (const std::string& s : stages) std::cout << s;
  }
  out.clear();
  if (wanted.count(core::stage_id::logits))
    out = stage_text(core::stage_id::logits, -1, -1, run.logits().bottomRows(1));
  return print(out);
}

}  // namespace

int run_family_info(const fs::path& path) {
  const fs::path folder = core::model_folder(path);
  const core::FamilyConfig cfg = core::read_family_config((folder / "config.json").string());
  const std::vector<core::SafetensorsFile> files = weight_files(path);
  std::uint64_t parameters = 0;
  std::set<std::string> dtypes;
  json tensors = json::array();
  for (const core::SafetensorsFile& f : files)
    for (const core::TensorInfo& t : f.tensors()) {
      parameters += t.elements();
      dtypes.insert(t.dtype);
      tensors.push_back({{"name", t.name},
                         {"dtype", t.dtype},
                         {"shape", t.shape},
                         {"file", fs::path(f.source()).filename().string()}});
    }
  std::string dtype;
  for (const std::string& d : dtypes) dtype += (dtype.empty() ? "" : ",") + d;
  std::error_code ec;
  const bool has_tokenizer = fs::exists(folder / "tokenizer.json", ec);
  json tokenizer = nullptr;
  if (has_tokenizer) {
    const core::HfTokenizer tok = core::HfTokenizer::load((folder / "tokenizer.json").string());
    tokenizer = {{"file", "tokenizer.json"},
                 {"vocab", tok.vocab_size()},
                 {"bos_id", tok.bos_id() < 0 ? json(nullptr) : json(tok.bos_id())}};
  }
  const json out = {{"config", config_json(cfg)},
                    {"model_type", config_json(cfg)["family"]},
                    {"dtype", dtype},
                    {"parameters", parameters},
                    {"tokenizer", tokenizer},
                    {"tensors", tensors}};
  // A folder or file name need not be UTF-8: U+FFFD stands for such bytes.
  return print(out.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
}

// Floats of every position's logits a trace keeps at most (1 GiB); past it
// the loss is left out (null) and only the last position's are kept.
constexpr std::int64_t kAllLogitsLimit = std::int64_t{1} << 28;

int run_family_trace(const ModelCommands& c, const fs::path& path) {
  const Loaded loaded = load_with_tokenizer(path);
  const core::FamilyConfig& cfg = loaded.model->config();
  const std::vector<int> ids = family_ids(c, cfg, loaded.tokenizer);
  const std::set<std::string> wanted = chosen_stages(c.stages);
  const std::vector<int> layers = checked_indices(c.layers, cfg.num_hidden_layers, "--layers");
  const std::vector<int> heads = checked_indices(c.heads, cfg.num_attention_heads, "--heads");
  const int T = static_cast<int>(ids.size());
  if (c.next_at < -1 || c.next_at >= T)
    throw core::ParseError("--next-at " + std::to_string(c.next_at) +
                           " is not a token of the text: it has " + std::to_string(T) +
                           " tokens, 0.." + std::to_string(T - 1));
  // Every position's logits (for the loss and --next-at) unless they pass 1 GiB.
  const bool all_logits =
      static_cast<std::int64_t>(T) * cfg.vocab_size <= kAllLogitsLimit || c.next_at >= 0;
  if (all_logits && static_cast<std::int64_t>(T) * cfg.vocab_size > kAllLogitsLimit)
    throw core::ParseError("--next-at needs every position's logits, " + std::to_string(T) + " x " +
                           std::to_string(cfg.vocab_size) +
                           " floats (over 1 GiB): shorten the text to the tokens up to it");
  const core::FamilyRun run(loaded.model, ids, core::FamilyRun::Options{.all_logits = all_logits});
  const int position = c.next_at < 0 ? T - 1 : c.next_at;
  if (c.format == "text")
    return trace_text(run, loaded.tokenizer, ids, layers, heads, wanted, position,
                      core::model_folder(path).filename().string());
  std::string out = "{\"model\": " +
                    json(core::model_folder(path).filename().string())
                        .dump(-1, ' ', false, json::error_handler_t::replace) +
                    ",\n \"ids\": [";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  out += "],\n \"tokens\": [";
  std::size_t at = 0;
  std::string spans;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::string bytes = bytes_of(loaded.tokenizer, ids[i]);
    out += (i ? ", " : "") + json(core::printable_token(bytes)).dump();
    spans +=
        (i ? ", [" : "[") + std::to_string(at) + ", " + std::to_string(at + bytes.size()) + "]";
    at += bytes.size();
  }
  out += "],\n \"spans\": [" + spans + "],\n \"config\": " + config_json(cfg).dump() +
         ",\n \"stages\": [";
  bool first = true;
  for (int l : layers) {
    std::vector<std::string> stages;
    layer_stages_out(run, l, heads, wanted, stage_head, stages);
    for (const std::string& s : stages) {
      out += (first ? "\n  " : ",\n  ") + s;
      first = false;
    }
    std::cout << out;  // a layer at a time
    out.clear();
  }
  if (wanted.count(core::stage_id::logits))
    out += (first ? "\n  " : ",\n  ") +
           stage_head(core::stage_id::logits, -1, -1, run.logits().bottomRows(1));
  return print(out + trace_tail(run, loaded.tokenizer, ids, position));
}

int run_family_generate(const ModelCommands& c, const fs::path& path) {
  if (c.tokens < 1) throw core::ParseError("--tokens must be at least 1 (new tokens to generate)");
  const Loaded loaded = load_with_tokenizer(path);
  const core::FamilyConfig& cfg = loaded.model->config();
  std::vector<int> ids = family_ids(c, cfg, loaded.tokenizer);
  const int limit = std::min(cfg.max_position_embeddings, core::FamilyRun::kMaxTokens);
  if (static_cast<int>(ids.size()) + c.tokens > limit)
    throw core::ParseError("the text's " + std::to_string(ids.size()) + " tokens and --tokens " +
                           std::to_string(c.tokens) + " are more than the model reads (" +
                           std::to_string(limit) + ")");
  const core::Sampling sampling{c.temperature, c.top_k, c.sample_seed};
  core::check_sampling(sampling, cfg.vocab_size);
  core::BookSampler sampler(sampling);  // greedy (the argmax) at temperature 0
  std::vector<int> added;
  core::FamilyRun run(loaded.model, ids);
  for (int n = 0; n < c.tokens; ++n) {  // each new token runs its own row (FamilyRun::retext)
    if (n) run.retext(ids);
    added.push_back(sampler.next(run.last_logits()));
    ids.push_back(added.back());
  }
  std::string bytes;
  for (int id : ids) bytes += bytes_of(loaded.tokenizer, id);
  const std::string text = core::decode_utf8_replace(bytes);
  if (c.generate_format == "text") return print(text + "\n");
  const json out = {{"ids", ids},       {"new_ids", added},
                    {"text", text},     {"temperature", c.temperature},
                    {"top_k", c.top_k}, {"seed", c.sample_seed}};
  return print(out.dump() + "\n");
}

int run_family_bench(const ModelCommands& c, const fs::path& path) {
  using clock = std::chrono::steady_clock;
  if (c.append && c.tokens < 2) throw core::ParseError("--append needs --tokens 2 or more");
  core::keep_freed_memory_for_reuse();  // as the app does: a rerun reuses warm pages
  const auto t0 = clock::now();
  const auto model = core::FamilyModel::load(path);
  const double load_ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
  const core::FamilyConfig& cfg = model->config();
  const int limit = std::min(cfg.max_position_embeddings, core::FamilyRun::kMaxTokens);
  if (c.tokens < 1 || c.tokens > limit)
    throw core::ParseError("--tokens must be 1.." + std::to_string(limit) +
                           " (the model's max_position_embeddings)");
  if (c.repeat < 1) throw core::ParseError("--repeat must be at least 1");
  std::vector<int> ids(static_cast<std::size_t>(c.tokens));
  for (int i = 0; i < c.tokens; ++i)
    ids[static_cast<std::size_t>(i)] = static_cast<int>((1000LL + 7919LL * i) % cfg.vocab_size);
  const std::vector<int> prefix(ids.begin(), ids.end() - 1);
  std::vector<double> ms;
  for (int r = 0; r <= c.repeat; ++r) {  // run 0 warms up
    if (c.append) {
      // What a key typed at the end costs the engine: the new row through
      // every layer (FamilyRun::retext) and every head's new row of weights.
      core::FamilyRun run(model, prefix);
      const auto start = clock::now();
      run.retext(ids);
      (void)run.weight_rows(c.tokens - 1);
      if (r) ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - start).count());
      continue;
    }
    const auto start = clock::now();
    const core::FamilyRun run(model, ids);
    for (int l = 0; l < run.num_layers(); ++l) (void)run.layer_weights(l);  // every head's weights
    if (r) ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - start).count());
  }
  std::sort(ms.begin(), ms.end());
  const double median = ms[ms.size() / 2];
  std::printf("model=%s family=%s layers=%d heads=%d kv_heads=%d d=%d tokens=%d %s load_ms=%.1f\n",
              core::model_folder(path).filename().string().c_str(),
              std::string(core::model_family_name(cfg.family)).c_str(), cfg.num_hidden_layers,
              cfg.num_attention_heads, cfg.num_key_value_heads, cfg.hidden_size, c.tokens,
              c.append ? "append of the last token to the others" : "full forward", load_ms);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux reports KiB
  std::printf("runs=%d min_ms=%.3f median_ms=%.3f max_ms=%.3f peak_rss_mb=%.1f\n", c.repeat,
              ms.front(), median, ms.back(), rss_mb);
  if (c.append) {
    // Bound by memory: every weight is read once for the new row. The
    // floor is reading them, timed now.
    const core::WeightStream stream = core::stream_weights(*model);
    std::printf("weights_mb=%.1f read_weights_ms=%.3f read_gbs=%.1f median_over_read=%.3g\n",
                stream.bytes / (1 << 20), stream.ms, stream.bytes / stream.ms / 1e6,
                median / stream.ms);
  } else {
    // This machine's FMA rate, measured now (after the runs): the floor's denominator.
    std::printf("fma_gflops=%.1f\n", core::machine_fma_gflops(0.3));
  }
  std::printf("median_ms=%.3f\n", median);
  return 0;
}

}  // namespace attnscope::cli
