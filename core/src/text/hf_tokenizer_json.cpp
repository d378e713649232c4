// hf_tokenizer_json.cpp: one SAX pass over tokenizer.json. A DOM of a 30 MB
// file (Gemma 3's 262,144 tokens and 514,906 merges) costs ~1 s in
// nlohmann's std::map objects; the vocabulary and merges go into flat
// lists instead, and only the small rest becomes JSON.
#include "attnscope/base/errors.hpp"
#include "text/hf_tokenizer_internal.hpp"

namespace attnscope::core {

namespace {

using nlohmann::json;

class Collector : public json::json_sax_t {
 public:
  explicit Collector(TokenizerDocument& out) : out_(out) {}

  bool null() override { return value(json()); }
  bool boolean(bool v) override { return value(json(v)); }
  bool number_integer(json::number_integer_t v) override { return number(v, json(v)); }
  bool number_unsigned(json::number_unsigned_t v) override {
    return number(static_cast<long long>(v), json(v));
  }
  bool number_float(json::number_float_t v, const std::string&) override { return value(json(v)); }
  bool binary(json::binary_t&) override { return value(json()); }
  bool string(std::string& v) override {
    if (mode_ == Mode::Merges) return merge_string(v);
    if (mode_ == Mode::MergePair) {
      pair_.push_back(std::move(v));
      return true;
    }
    return value(json(std::move(v)));
  }
  bool key(std::string& k) override {
    key_ = std::move(k);
    return true;
  }
  bool start_object(std::size_t) override {
    if (mode_ != Mode::Dom) return bad("expected a string");
    if (in_model() && key_ == "vocab") {
      out_.has_vocab = true;
      mode_ = Mode::Vocab;
      return true;
    }
    return open(json::object());
  }
  bool end_object() override {
    if (mode_ == Mode::Vocab) {
      mode_ = Mode::Dom;
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    if (mode_ == Mode::Merges) {
      mode_ = Mode::MergePair;
      pair_.clear();
      return true;
    }
    if (mode_ != Mode::Dom) return bad("expected a token string");
    if (in_model() && key_ == "merges") {
      out_.has_merges = true;
      mode_ = Mode::Merges;
      return true;
    }
    return open(json::array());
  }
  bool end_array() override {
    if (mode_ == Mode::MergePair) {
      mode_ = Mode::Merges;
      if (pair_.size() != 2) return bad("expected [left, right]");
      out_.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
      return true;
    }
    if (mode_ == Mode::Merges) {
      mode_ = Mode::Dom;
      return true;
    }
    stack_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    error_ = e.what();
    return false;
  }
  const std::string& error() const { return error_; }

 private:
  enum class Mode { Dom, Vocab, Merges, MergePair };

  bool in_model() const { return !stack_.empty() && stack_.back() == model_; }

  bool bad(const std::string& what) {
    if (out_.problem.empty()) {
      const bool vocab = mode_ == Mode::Vocab;
      out_.problem = vocab ? "model.vocab: token " + json(key_).dump() + ": " + what
                           : "model.merges[" + std::to_string(out_.merges.size()) + "]: " + what;
    }
    return false;  // stop: the loader refuses with the problem
  }

  bool number(long long v, json j) {
    if (mode_ == Mode::Vocab) {
      out_.vocab.emplace_back(std::move(key_), v);
      return true;
    }
    return value(std::move(j));
  }

  bool merge_string(const std::string& s) {
    const std::size_t space = s.find(' ');
    if (space == 0 || space == std::string::npos || space + 1 == s.size() ||
        s.find(' ', space + 1) != std::string::npos)
      return bad(json(s).dump() + " is not \"left right\"");
    out_.merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    return true;
  }

  // A scalar where a container's element goes.
  bool value(json v) {
    if (mode_ == Mode::Vocab) return bad("expected an integer id");
    if (mode_ != Mode::Dom) return bad("expected a token string");
    place(std::move(v));
    return true;
  }

  json* place(json v) {
    if (stack_.empty()) {
      out_.doc = std::move(v);
      return &out_.doc;
    }
    json& top = *stack_.back();
    if (top.is_object()) {
      const bool model = stack_.size() == 1 && key_ == "model" && v.is_object();
      json& slot = top[key_];
      slot = std::move(v);
      if (model) model_ = &slot;
      return &slot;
    }
    top.push_back(std::move(v));
    return &top.back();
  }

  bool open(json container) {
    stack_.push_back(place(std::move(container)));
    return true;
  }

  TokenizerDocument& out_;
  std::vector<json*> stack_;  // the open containers; pointers stay valid while open
  std::string key_;
  Mode mode_ = Mode::Dom;
  const json* model_ = nullptr;  // the root's "model" object, once open
  std::vector<std::string> pair_;
  std::string error_;
};

}  // namespace

TokenizerDocument read_tokenizer_document(std::string_view text, const std::string& source) {
  TokenizerDocument out;
  Collector collector(out);
  const bool parsed = json::sax_parse(text, &collector);
  if (!out.problem.empty()) throw ParseError(source + ": " + out.problem);
  if (!parsed)
    throw ParseError(source + ": not valid JSON (" + collector.error() +
                     "): expected a tokenizer.json");
  return out;
}

}  // namespace attnscope::core
