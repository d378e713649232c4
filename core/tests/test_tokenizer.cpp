// test_tokenizer.cpp: GPT-2's BPE tokenizer against ids from OpenAI's
// encoder.py (the book's tiktoken "gpt2" gives the same), byte spans,
// the pre-tokenizer's whitespace and contraction rules, round trips, and
// the errors of bad text and bad vocabulary files.
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "attnscope/io/io.hpp"
#include "attnscope/text/tokenizer.hpp"
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

TEST(Gpt2Tokenizer, EncodeOrdinaryReadsEndOfTextAsText) {
  const auto tokens = Gpt2Tokenizer::builtin().encode_ordinary("Hi<|endoftext|>");
  ASSERT_GT(tokens.size(), 2u);
  for (const auto& t : tokens) EXPECT_NE(t.id, 50256);
  EXPECT_EQ(tokens.back().end, 15u);
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

// Python's bytes.decode("utf-8", errors="replace") of each input (tiktoken's
// decode reads a token sequence's bytes so), printed by Python 3.11: every
// maximal subpart of an ill-formed sequence is one U+FFFD (EF BF BD).
TEST(DecodeUtf8Replace, MatchesPythonsReplaceDecoding) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      // empty
      {"", ""},
      // ASCII
      {"plain ascii", "plain ascii"},
      // 2-, 3- and 4-byte characters, complete
      {"caf\xc3\xa9 \xe6\x9d\xb1 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe6\x9d\xb1 \xf0\x9f\x98\x80"},
      // 2-byte character cut after 1
      {"a\xc3", "a\xef\xbf\xbd"},
      // 3-byte cut after 1
      {"\xe6", "\xef\xbf\xbd"},
      // 3-byte cut after 2: one U+FFFD
      {"\xe6\x9d", "\xef\xbf\xbd"},
      // 4-byte cut after 2
      {"\xf0\x9f", "\xef\xbf\xbd"},
      // 4-byte cut after 3: one U+FFFD
      {"\xf0\x9f\x98", "\xef\xbf\xbd"},
      // F1 cut after 3
      {"\xf1\x80\x80", "\xef\xbf\xbd"},
      // cut by an ASCII byte, which is kept
      {"\xe6\x9dx\xb1", "\xef\xbf\xbdx\xef\xbf\xbd"},
      // cut by the start of a character, which is kept
      {"\xe6\x9d\xe6\x9d\xb1", "\xef\xbf\xbd\xe6\x9d\xb1"},
      // lone continuation byte
      {"\x80", "\xef\xbf\xbd"},
      // two lone continuation bytes: two U+FFFD
      {"\x9d\xb1ok", "\xef\xbf\xbd\xef\xbf\xbdok"},
      // a continuation byte after a complete character
      {"\xf0\x9f\x98\x80\x80", "\xf0\x9f\x98\x80\xef\xbf\xbd"},
      // overlong 2-byte (C0)
      {"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"},
      // overlong 2-byte (C1)
      {"\xc1\xbf", "\xef\xbf\xbd\xef\xbf\xbd"},
      // overlong 3-byte
      {"\xe0\x80\xaf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
      // overlong 3-byte, the largest
      {"\xe0\x9f\xbf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
      // U+0800, the smallest 3-byte
      {"\xe0\xa0\x80", "\xe0\xa0\x80"},
      // overlong 4-byte
      {"\xf0\x80\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
      // overlong 4-byte, the largest
      {"\xf0\x8f\xbf\xbf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
      // surrogate U+D800: three U+FFFD
      {"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
      // surrogate U+DFFF
      {"\xed\xbf\xbf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
      // U+D7FF, just below the surrogates
      {"\xed\x9f\xbf", "\xed\x9f\xbf"},
      // U+10FFFF, the last code point
      {"\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"},
      // past U+10FFFF
      {"\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
      // F5
      {"\xf5\x80\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
      // F8, an old 5-byte form
      {"\xf8\x88\x80\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"},
      // FE FF
      {"\xfe\xff", "\xef\xbf\xbd\xef\xbf\xbd"},
      // U+FFFD itself
      {"\xef\xbf\xbd", "\xef\xbf\xbd"},
      // mixed
      {"a\xff"
       "b\xc3\xa9\xe2\x82",
       "a\xef\xbf\xbd"
       "b\xc3\xa9\xef\xbf\xbd"},
      // a euro sign, then one cut
      {"\xc3\xa9\xe2\x82\xac\xe2\x82", "\xc3\xa9\xe2\x82\xac\xef\xbf\xbd"},
  };
  for (const auto& [bytes, want] : cases)
    EXPECT_EQ(decode_utf8_replace(bytes), want) << printable_token(bytes);
}

TEST(DecodeUtf8Replace, AlwaysGivesValidUtf8AndKeepsValidText) {
  // printable_token rewrites every byte that is not part of a well-formed
  // character, so it leaves valid UTF-8 as it is.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> length(0, 12), byte(0, 255), tail(0x80, 0xBF);
  for (int k = 0; k < 20000; ++k) {
    std::string bytes;
    for (int n = length(rng); n > 0; --n) {
      // Half the bytes continuation bytes, so that long sequences happen.
      bytes += static_cast<char>(byte(rng) % 2 ? tail(rng) : byte(rng));
    }
    const std::string text = decode_utf8_replace(bytes);
    ASSERT_EQ(printable_token(text), text) << "not valid UTF-8 from " << printable_token(bytes);
    ASSERT_EQ(decode_utf8_replace(text), text);
  }
  const std::string valid = "naïve café 東京 😀👩‍💻 \u0085 \U0010FFFF <|endoftext|>";
  EXPECT_EQ(decode_utf8_replace(valid), valid);
}

TEST(Gpt2Tokenizer, DecodeTextJoinsTheBytesBeforeDecodingLikeTiktoken) {
  const auto& tok = Gpt2Tokenizer::builtin();
  // 東 is two tokens: 30266 (E6 9D) and 109 (B1). 126 is C2 alone, 227 is 85.
  EXPECT_EQ(tok.decode({30266, 109}), "\xe6\x9d\xb1");
  EXPECT_EQ(tok.decode_text({30266, 109}), "東") << "a character split across two tokens is whole";
  EXPECT_EQ(tok.decode_text({30266}), "\xef\xbf\xbd");
  EXPECT_EQ(tok.decode_text({109}), "\xef\xbf\xbd");
  EXPECT_EQ(tok.decode_text({126}), "\xef\xbf\xbd");
  EXPECT_EQ(tok.decode_text({126, 227}), "\u0085");
  EXPECT_EQ(tok.decode_text({15496, 11, 126}), "Hello,\xef\xbf\xbd");
  EXPECT_EQ(tok.decode_text({}), "");
  EXPECT_THROW((void)tok.decode_text({50257}), ParseError);
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
