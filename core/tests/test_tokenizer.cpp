// test_tokenizer.cpp: GPT-2's BPE tokenizer against ids from OpenAI's
// encoder.py (the book's tiktoken "gpt2" gives the same), byte spans,
// the pre-tokenizer's whitespace and contraction rules, round trips, and
// the errors of bad text and bad vocabulary files.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "attnscope/io.hpp"
#include "attnscope/tokenizer.hpp"
#include "temp_dir.hpp"

namespace attnscope::core {
namespace {

std::vector<int> ids(std::string_view text) {
  std::vector<int> out;
  for (const auto& t : Gpt2Tokenizer::builtin().encode(text)) out.push_back(t.id);
  return out;
}

TEST(Gpt2Tokenizer, BookSentencesGiveGpt2Ids) {
  EXPECT_EQ(ids("Hello, world!"), (std::vector<int>{15496, 11, 995, 0}));
  EXPECT_EQ(ids("Every effort moves you"), (std::vector<int>{6109, 3626, 6100, 345}));
  EXPECT_EQ(Gpt2Tokenizer::builtin().vocab_size(), 50257u);
}

TEST(Gpt2Tokenizer, EndOfTextTypedInTheTextIsTheSpecialToken) {
  EXPECT_EQ(ids("Hi<|endoftext|>there"), (std::vector<int>{17250, 50256, 8117}));
  EXPECT_EQ(ids(" <|endoftext|> "), (std::vector<int>{220, 50256, 220}));
  const auto tokens = Gpt2Tokenizer::builtin().encode("Hi<|endoftext|>there");
  ASSERT_EQ(tokens.size(), 3u);
  EXPECT_EQ(tokens[1].text, "<|endoftext|>");
  EXPECT_EQ(tokens[1].start, 2u);
  EXPECT_EQ(tokens[1].end, 15u);
}

TEST(Gpt2Tokenizer, ContractionsSplitOffOnlyLowercaseSuffixes) {
  EXPECT_EQ(ids("I'm sure they'll've won't 'S 'd"),
            (std::vector<int>{40, 1101, 1654, 484, 1183, 1053, 1839, 470, 705, 50, 705, 67}));
}

TEST(Gpt2Tokenizer, WhitespaceRunsLeaveTheirLastSpaceToTheNextWord) {
  // "  b": " " then " b"; "\t\td": two tabs alone; "\n\n x  ": "\n\n" then " x", "  " at the end.
  EXPECT_EQ(ids("a  b   c\t\td \n\n x  "), (std::vector<int>{64, 220, 275, 220, 220, 269, 197, 197,
                                                             67, 220, 628, 2124, 220, 220}));
  // U+0085, U+00A0, U+2028 and U+3000 are whitespace to the pattern.
  EXPECT_EQ(ids("x\u0085y\u00a0\u2028 z\u3000 9"),
            (std::vector<int>{87, 126, 227, 88, 1849, 447, 101, 1976, 5099, 222, 860}));
}

TEST(Gpt2Tokenizer, SpansCoverTheTextsBytesInOrder) {
  const std::string text = "naïve café 東京 😀👩‍💻";
  const auto tokens = Gpt2Tokenizer::builtin().encode(text);
  std::vector<int> got;
  std::size_t offset = 0;
  for (const auto& t : tokens) {
    got.push_back(t.id);
    EXPECT_EQ(t.start, offset);
    EXPECT_EQ(t.end, t.start + t.text.size());
    EXPECT_EQ(text.substr(t.start, t.end - t.start), t.text);
    offset = t.end;
  }
  EXPECT_EQ(offset, text.size());
  EXPECT_EQ(got, (std::vector<int>{2616, 38776, 40304, 10545, 251, 109, 12859, 105, 30325, 222,
                                   41840, 102, 447, 235, 8582, 240, 119}));
  EXPECT_EQ(tokens[1].text, "\xc3\xafve");  // "ïve"
  EXPECT_EQ(tokens[3].text, " \xe6");       // " " and the first byte of 東
  EXPECT_EQ(tokens[4].text, "\x9d");        // its middle byte
}

TEST(Gpt2Tokenizer, DecodeOfEncodeGivesTheTextBack) {
  const auto& tok = Gpt2Tokenizer::builtin();
  for (const std::string text :
       {"", " ", "Hello, world!", "  leading and trailing  ", "tabs\t\tand\r\nlines\n",
        "<|endoftext|><|endoftext|>", "<|endoftext", "ÀÉÎõü ñ 1234567 ½ ٣",
        "e\u0301\u0302 \u200d\ufeff 🏳️‍🌈"}) {
    std::vector<int> got;
    for (const auto& t : tok.encode(text)) got.push_back(t.id);
    EXPECT_EQ(tok.decode(got), text);
  }
  EXPECT_TRUE(tok.encode("").empty());
}

TEST(Gpt2Tokenizer, InvalidUtf8IsRefusedNamingTheByteOffset) {
  const auto& tok = Gpt2Tokenizer::builtin();
  for (const auto& [text, offset] :
       std::vector<std::pair<std::string, int>>{{"ab\xff", 2},
                                                {"caf\xc3", 3},
                                                {"\xc0\xaf", 0},
                                                {"x\xed\xa0\x80", 1},
                                                {"ok <|endoftext|>\x80", 16}}) {
    try {
      (void)tok.encode(text);
      ADD_FAILURE() << "accepted invalid UTF-8";
    } catch (const ParseError& e) {
      EXPECT_NE(std::string(e.what()).find("not valid UTF-8 at byte " + std::to_string(offset)),
                std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW((void)tok.decode({50257}), ParseError);
  EXPECT_THROW((void)tok.decode({-1}), ParseError);
}

TEST(Gpt2Tokenizer, JsonShowsPartialCharactersAsHexBytes) {
  EXPECT_EQ(printable_token(" \xe6"), " <0xE6>");
  EXPECT_EQ(printable_token("\x9d\xb1ok\xc3\xa9\xe4\xba"), "<0x9D><0xB1>oké<0xE4><0xBA>");
  EXPECT_EQ(tokens_json(Gpt2Tokenizer::builtin().encode("Hi \"東")),
            R"({"ids": [17250,366,30266,109], "tokens": ["Hi"," \"","<0xE6><0x9D>","<0xB1>"], )"
            R"("spans": [[0,2],[2,4],[4,6],[6,7]]})");
  EXPECT_EQ(parse_json_string_lines("\"a\\nb\"\n\n\"\\u00e9\"\n", "x"),
            (std::vector<std::string>{"a\nb", "é"}));
  EXPECT_THROW((void)parse_json_string_lines("\"a\"\n3\n", "x"), ParseError);
}

void write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string load_error(const testing::TempDir& dir) {
  try {
    (void)Gpt2Tokenizer::load_dir(dir.path().string());
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(Gpt2Tokenizer, SmallHuggingFaceFolderLoadsAndMerges) {
  testing::TempDir dir;
  write(dir / "vocab.json", R"({"a": 0, "b": 1, "ab": 2, "Ġ": 3, "Ġab": 4, "<|endoftext|>": 5})");
  write(dir / "merges.txt", "#version: 0.2\na b\nĠ ab\n");
  const auto tok = Gpt2Tokenizer::load_dir(dir.path().string());
  std::vector<int> got;
  for (const auto& t : tok.encode("ab ab<|endoftext|>b")) got.push_back(t.id);
  EXPECT_EQ(got, (std::vector<int>{2, 4, 5, 1}));
  EXPECT_EQ(tok.token_bytes(4), " ab");
}

TEST(Gpt2Tokenizer, BadVocabularyFilesNameTheFileAndTheProblem) {
  testing::TempDir dir;
  EXPECT_NE(load_error(dir).find("expected encoder.json + vocab.bpe"), std::string::npos);
  write(dir / "encoder.json", "[1, 2]");
  write(dir / "vocab.bpe", "#version: 0.2\na b\n");
  EXPECT_NE(load_error(dir).find("encoder.json: expected a JSON object"), std::string::npos);
  write(dir / "encoder.json", R"({"a": 0, "b": 7})");
  EXPECT_NE(load_error(dir).find("token \"b\" has id 7"), std::string::npos);
  write(dir / "encoder.json", R"({"a": 0, "b b": 1})");
  EXPECT_NE(load_error(dir).find("outside GPT-2's byte-to-unicode map"), std::string::npos);
  write(dir / "encoder.json", R"({"a": 0, "b": 1})");
  write(dir / "vocab.bpe", "#version: 0.2\na b c\n");
  EXPECT_NE(load_error(dir).find("vocab.bpe: line 2 is not a merge"), std::string::npos);
}

TEST(Gpt2Tokenizer, BuiltinVocabularyFolderFollowsTheEnvironment) {
  const char* old = std::getenv("ATTNSCOPE_ASSETS");
  ::setenv("ATTNSCOPE_ASSETS", "/nonexistent-assets", 1);
  EXPECT_EQ(Gpt2Tokenizer::assets_dir(), "/nonexistent-assets");
  if (old) {
    ::setenv("ATTNSCOPE_ASSETS", old, 1);
  } else {
    ::unsetenv("ATTNSCOPE_ASSETS");
  }
}

}  // namespace
}  // namespace attnscope::core
