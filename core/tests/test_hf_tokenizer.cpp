// test_hf_tokenizer.cpp: HfTokenizer on small tokenizer.json files written
// here: the Split regexes' pieces (contractions in both cases, digit runs,
// whitespace and newlines), both merge formats, ignore_merges, added and
// special tokens, the BOS rules, NFC and its spans, Gemma's space mark and
// byte fallback, and each refusal. The real files are compared with
// Hugging Face's tokenizers by hf_tokenizer_oracle.py.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "attnscope/base/errors.hpp"
#include "attnscope/text/hf_tokenizer.hpp"
#include "temp_dir.hpp"
#include "text/unicode_text.hpp"

namespace attnscope::core {
namespace {

using nlohmann::json;

const std::string kLlamaRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
const std::string kQwenRegex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// A byte-level file: the 256 byte characters, then `words` (byte-mapped),
// merges in the given order (each merge's result must be a word).
json byte_level_file(const std::string& regex, const std::vector<std::string>& words,
                     const json& merges) {
  json vocab = json::object();
  int id = 0;
  for (const auto& c : unicode::byte_chars()) vocab[c] = id++;
  for (const auto& w : words) vocab[w] = id++;
  return {{"version", "1.0"},
          {"added_tokens", json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"},
               {"pattern", {{"Regex", regex}}},
               {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"},
               {"add_prefix_space", false},
               {"trim_offsets", true},
               {"use_regex", false}}}}}},
          {"post_processor", nullptr},
          {"model",
           {{"type", "BPE"},
            {"dropout", nullptr},
            {"unk_token", nullptr},
            {"ignore_merges", false},
            {"vocab", vocab},
            {"merges", merges}}}};
}

// A file with "Ġt", "he", "Ġthe" and "hello" (for ignore_merges: no merge makes it).
json small_file(const std::string& regex = kLlamaRegex) {
  return byte_level_file(regex, {"\xC4\xA0t", "he", "\xC4\xA0the", "hello"},
                         json::array({"\xC4\xA0 t", "h e", "\xC4\xA0t he"}));
}

HfTokenizer make(const json& file, const json& config = json()) {
  return HfTokenizer::parse(file.dump(), config.is_null() ? "" : config.dump(), "test.json");
}

// The pieces of the text as the tokens' bytes.
std::vector<std::string> texts(const std::vector<Token>& tokens) {
  std::vector<std::string> out;
  for (const auto& t : tokens) out.push_back(t.text);
  return out;
}

std::vector<std::pair<std::size_t, std::size_t>> spans(const std::vector<Token>& tokens) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (const auto& t : tokens) out.emplace_back(t.start, t.end);
  return out;
}

// The message of the ParseError the file gets.
std::string expect_error(const json& file, const json& config = json()) {
  try {
    make(file, config);
  } catch (const ParseError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ParseError";
  return "";
}

TEST(HfTokenizer, MergesByRankAndKeepsByteSpans) {
  const HfTokenizer tok = make(small_file());
  const auto tokens = tok.encode("the the");
  EXPECT_EQ(texts(tokens), (std::vector<std::string>{"t", "he", " the"}));
  EXPECT_EQ(spans(tokens),
            (std::vector<std::pair<std::size_t, std::size_t>>{{0, 1}, {1, 3}, {3, 7}}));
  EXPECT_EQ(tok.decode({tokens[0].id, tokens[1].id}), "the");
  EXPECT_EQ(tok.bos_id(), -1);
}

TEST(HfTokenizer, ReadsMergesAsPairsAsWellAsStrings) {
  json pairs = small_file();
  pairs["model"]["merges"] = json::array(
      {json::array({"\xC4\xA0", "t"}), json::array({"h", "e"}), json::array({"\xC4\xA0t", "he"})});
  std::vector<int> a, b;
  for (const auto& t : make(small_file()).encode(" the he")) a.push_back(t.id);
  for (const auto& t : make(pairs).encode(" the he")) b.push_back(t.id);
  EXPECT_EQ(a, b);
}

TEST(HfTokenizer, IgnoreMergesEmitsAPreTokenOfTheVocabularyWhole) {
  json file = small_file();
  EXPECT_EQ(make(file).encode("hello").size(), 4u);  // h e l l o -> h|e merge only: he l l o
  file["model"]["ignore_merges"] = true;
  const auto tokens = make(file).encode("hello");
  ASSERT_EQ(tokens.size(), 1u);
  EXPECT_EQ(tokens[0].text, "hello");
}

TEST(HfTokenizer, Llama3SplitsDigitsInThreesAndQwenOneByOne) {
  // Merges never cross a pre-token: these would join all five digits.
  json file =
      byte_level_file(kLlamaRegex, {"12", "123", "45"}, json::array({"1 2", "12 3", "4 5"}));
  EXPECT_EQ(texts(make(file).encode("12345")), (std::vector<std::string>{"123", "45"}));
  file = byte_level_file(kQwenRegex, {"12", "123", "45"}, json::array({"1 2", "12 3", "4 5"}));
  EXPECT_EQ(texts(make(file).encode("12345")), (std::vector<std::string>{"1", "2", "3", "4", "5"}));
}

TEST(HfTokenizer, ContractionsMatchInBothCases) {
  // "'S" is its own pre-token, so no merge joins "T" and "'".
  const json file =
      byte_level_file(kLlamaRegex, {"T'", "'S", "'s"}, json::array({"T '", "' S", "' s"}));
  EXPECT_EQ(texts(make(file).encode("IT'S")), (std::vector<std::string>{"I", "T", "'S"}));
  EXPECT_EQ(texts(make(file).encode("it's")), (std::vector<std::string>{"i", "t", "'s"}));
}

TEST(HfTokenizer, WhitespaceRunsLeaveTheirLastSpaceToTheNextWord) {
  const json file = byte_level_file(
      kLlamaRegex,
      {"\xC4\xA0\xC4\xA0",
       "\xC4\xA0"
       "b",
       "\xC4\x8A\xC4\x8A", "\xC4\x8D\xC4\x8A"},
      json::array({"\xC4\xA0 \xC4\xA0", "\xC4\xA0 b", "\xC4\x8A \xC4\x8A", "\xC4\x8D \xC4\x8A"}));
  const HfTokenizer tok = make(file);
  EXPECT_EQ(texts(tok.encode("a   b")), (std::vector<std::string>{"a", "  ", " b"}));
  // \s*[\r\n]+ ends after the run's last newline, the space goes on to
  // "b"; inside "\r\n\n" the merge ranked first ("\n\n") wins.
  EXPECT_EQ(texts(tok.encode("a\r\n\n b")), (std::vector<std::string>{"a", "\r", "\n\n", " b"}));
  EXPECT_EQ(texts(tok.encode("a  ")), (std::vector<std::string>{"a", "  "}));
}

TEST(HfTokenizer, AddedTokensAreMatchedLongestFirstAndSpecialOnesCanBeText) {
  json file = small_file();
  file["added_tokens"] =
      json::array({{{"id", 300}, {"content", "<|s|>"}, {"special", true}, {"normalized", false}},
                   {{"id", 301}, {"content", "<|s|>x"}, {"special", false}, {"normalized", false}},
                   {{"id", 302}, {"content", "<t>"}, {"special", false}, {"normalized", false}}});
  for (int id = 260; id < 300; ++id) file["model"]["vocab"]["w" + std::to_string(id)] = id;
  const HfTokenizer tok = make(file);
  auto tokens = tok.encode("a<|s|>b<|s|>x<t>");
  std::vector<int> ids;
  for (const auto& t : tokens) ids.push_back(t.id);
  EXPECT_EQ(ids[1], 300);
  EXPECT_EQ(tokens[1].start, 1u);
  EXPECT_EQ(tokens[1].end, 6u);
  EXPECT_EQ(ids[3], 301);
  EXPECT_EQ(ids[4], 302);
  tokens = tok.encode("<|s|><t>", {.special = false});
  EXPECT_EQ(tokens.back().id, 302);  // non-special tokens still match
  EXPECT_GT(tokens.size(), 2u);      // "<|s|>" read as text
}

TEST(HfTokenizer, TheTemplateOrTheConfigAddsTheBos) {
  json file = small_file();
  file["added_tokens"] = json::array({{{"id", 260}, {"content", "<s>"}, {"special", true}}});
  file["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {260}}, {"tokens", {"<s>"}}}}}}};
  auto tokens = make(file).encode("the");
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[0].id, 260);
  EXPECT_EQ(tokens[0].start, 0u);
  EXPECT_EQ(tokens[0].end, 0u);
  EXPECT_EQ(make(file).encode("the", {.special = false}).size(), 2u);
  file["post_processor"] = {{"type", "ByteLevel"}};
  EXPECT_EQ(make(file).encode("the").size(), 2u);
  const json config = {{"add_bos_token", true}, {"bos_token", "<s>"}};
  EXPECT_EQ(make(file, config).bos_id(), 260);
  EXPECT_EQ(make(file, config).encode("the").front().id, 260);
}

TEST(HfTokenizer, NfcComposesAndMapsSpansToTheOriginalCharacters) {
  EXPECT_EQ(unicode::nfc_string("e\xCC\x81"), "\xC3\xA9");     // e + U+0301 -> é
  EXPECT_EQ(unicode::nfc_string("\xE2\x84\xAB"), "\xC3\x85");  // U+212B -> Å
  EXPECT_EQ(unicode::nfc_string("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // 각
  // q + dot below (220) + dot above (230), given in the other order.
  EXPECT_EQ(unicode::nfc_string("q\xCC\x87\xCC\xA3"), "q\xCC\xA3\xCC\x87");
  EXPECT_EQ(unicode::nfc_string("plain text"), "plain text");
  json file = small_file();
  file["normalizer"] = {{"type", "NFC"}};
  const auto tokens = make(file).encode("ae\xCC\x81z");  // a, é (2 bytes from 3), z
  ASSERT_EQ(tokens.size(), 4u);
  EXPECT_EQ(tokens[1].text + tokens[2].text, "\xC3\xA9");
  EXPECT_EQ(spans(tokens),
            (std::vector<std::pair<std::size_t, std::size_t>>{{0, 1}, {1, 4}, {4, 4}, {4, 5}}));
}

TEST(HfTokenizer, SentencePieceStyleReplacesSpacesAndFallsBackToBytes) {
  json vocab = {{"<unk>", 0},
                {"<bos>", 1},
                {"\xE2\x96\x81", 2},
                {"a", 3},
                {"b", 4},
                {"\xE2\x96\x81"
                 "b",
                 5},
                {"<0xC3>", 6},
                {"<0xA9>", 7}};
  int next = 8;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    if (!vocab.contains(name)) vocab[name] = next++;
  }
  const json file = {
      {"added_tokens", json::array({{{"id", 1}, {"content", "<bos>"}, {"special", true}}})},
      {"normalizer",
       {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\xE2\x96\x81"}}},
      {"pre_tokenizer",
       {{"type", "Split"}, {"pattern", {{"String", " "}}}, {"behavior", "MergedWithPrevious"}}},
      {"model",
       {{"type", "BPE"},
        {"unk_token", "<unk>"},
        {"byte_fallback", true},
        {"fuse_unk", true},
        {"vocab", vocab},
        {"merges", json::array({json::array({"\xE2\x96\x81", "b"})})}}}};
  const auto tokens =
      make(file, {{"add_bos_token", true}, {"bos_token", "<bos>"}}).encode("a b\xC3\xA9");
  EXPECT_EQ(texts(tokens), (std::vector<std::string>{"<bos>", "a", " b", "\xC3", "\xA9"}));
  EXPECT_EQ(spans(tokens), (std::vector<std::pair<std::size_t, std::size_t>>{
                               {0, 0}, {0, 1}, {1, 3}, {3, 4}, {4, 5}}));
}

TEST(HfTokenizer, RefusesWhatItDoesNotRead) {
  json file = small_file();
  file["model"]["type"] = "WordPiece";
  EXPECT_NE(expect_error(file).find("model.type: \"WordPiece\" is not read"), std::string::npos);
  file = small_file();
  file["normalizer"] = {{"type", "NFKC"}};
  EXPECT_NE(expect_error(file).find("normalizer: type \"NFKC\""), std::string::npos);
  file = small_file();
  file["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\w+";
  EXPECT_NE(expect_error(file).find("pre_tokenizer.pretokenizers[0].pattern.Regex"),
            std::string::npos);
  file = small_file();
  file["pre_tokenizer"]["pretokenizers"][1]["use_regex"] = true;
  EXPECT_NE(expect_error(file).find("use_regex"), std::string::npos);
  file = small_file();
  file["pre_tokenizer"] = {{"type", "Whitespace"}};
  EXPECT_NE(expect_error(file).find("pre_tokenizer: type \"Whitespace\""), std::string::npos);
  file = small_file();
  file["model"]["merges"].push_back("x yz");
  EXPECT_NE(expect_error(file).find("model.merges[3]: token \"yz\" is not in the vocabulary"),
            std::string::npos);
  file = small_file();
  file["model"]["merges"].push_back("xyz");
  EXPECT_NE(expect_error(file).find("model.merges[3]"), std::string::npos);
  file = small_file();
  file["post_processor"] = {{"type", "BertProcessing"}};
  EXPECT_NE(expect_error(file).find("post_processor: type \"BertProcessing\""), std::string::npos);
  file = small_file();
  file["model"]["dropout"] = 0.1;
  EXPECT_NE(expect_error(file).find("model.dropout"), std::string::npos);
  EXPECT_THROW(HfTokenizer::parse("{\"model\": ", "", "x.json"), ParseError);
  EXPECT_THROW(HfTokenizer::parse("[1, 2]", "", "x.json"), ParseError);
}

TEST(HfTokenizer, RefusesInvalidUtf8NamingTheByte) {
  const HfTokenizer tok = make(small_file());
  try {
    tok.encode("ok \xFF");
    FAIL() << "no ParseError";
  } catch (const ParseError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid UTF-8 at byte 3"), std::string::npos);
  }
}

TEST(HfTokenizer, LoadsAFolderWithItsConfig) {
  testing::TempDir dir;
  json file = small_file();
  file["added_tokens"] = json::array({{{"id", 260}, {"content", "<s>"}, {"special", true}}});
  std::ofstream(dir.path() / "tokenizer.json") << file.dump();
  std::ofstream(dir.path() / "tokenizer_config.json")
      << json({{"add_bos_token", true}, {"bos_token", {{"content", "<s>"}}}}).dump();
  EXPECT_TRUE(HfTokenizer::is_tokenizer_json(dir.path().string()));
  EXPECT_EQ(HfTokenizer::load(dir.path().string()).bos_id(), 260);
  EXPECT_EQ(HfTokenizer::load((dir.path() / "tokenizer.json").string()).bos_id(), 260);
  EXPECT_FALSE(HfTokenizer::is_tokenizer_json((dir.path() / "nothing").string()));
}

}  // namespace
}  // namespace attnscope::core
