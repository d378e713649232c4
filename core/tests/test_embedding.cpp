// test_embedding.cpp: chapter2_embeddings against python3-torch 1.13:
//   torch.manual_seed(123)
//   tok = torch.nn.Embedding(50257, d_in); pos = torch.nn.Embedding(context_length, d_in)
//   x = tok(ids) + pos(torch.arange(T))   # bits: x.numpy().view(numpy.uint32)
// with ids = GPT-2's tokens of "Your journey starts with one step".
#include <bit>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnscope/attention/embedding.hpp"
#include "test_support.hpp"

namespace attnscope::core {
namespace {

const std::vector<int> kJourney = {7120, 7002, 4940, 351, 530, 2239};

void expect_bits(const RowMatrix& m, const std::vector<std::uint32_t>& bits, const char* what) {
  ASSERT_EQ(static_cast<std::size_t>(m.size()), bits.size()) << what;
  for (std::size_t k = 0; k < bits.size(); ++k)
    EXPECT_EQ(std::bit_cast<std::uint32_t>(m.data()[k]), bits[k]) << what << " element " << k;
}

TEST(Chapter2Embeddings, TokenEmbeddingMatchesTorch) {
  const RowMatrix x = chapter2_embeddings(kJourney, 4, 123);
  EXPECT_EQ(x.rows(), 6);
  EXPECT_EQ(x.cols(), 4);
  expect_bits(x, {0xbf471ba2u, 0xbe0691dau, 0xbf988c78u, 0xbf02ae8eu, 0x3f30c41au, 0x3d86c467u,
                  0x3d99c0bau, 0x3fe10846u, 0xbdc9352du, 0x3f2482d5u, 0x3c3e3af1u, 0x40208e0fu,
                  0x3f6de3b2u, 0x3feedb73u, 0xc0071cacu, 0xbdf24006u, 0xbf8e40ccu, 0x3f8194afu,
                  0xbd8139dfu, 0xc025afeau, 0xbf7e584au, 0x3f64fccfu, 0x3fb792f4u, 0x3d881f36u},
              "d_in 4, no positions");
}

TEST(Chapter2Embeddings, PositionalEmbeddingIsDrawnAfterTheTokenTable) {
  expect_bits(chapter2_embeddings(kJourney, 4, 123, 8),
              {0xc00787c0u, 0xbbb280c0u, 0xbf6ce6eeu, 0xbf48b007u, 0x3fb80682u, 0x3eea5349u,
               0x3eda7166u, 0xbf1f6eccu, 0x3e8ffc2cu, 0x3fb6e874u, 0x3ec6b431u, 0x3e30d230u,
               0x3e801cb2u, 0x40110707u, 0xbfde1034u, 0x3fb8257au, 0xbfb676f3u, 0x3f941bafu,
               0xbf548762u, 0xc0120da8u, 0xbfc1b484u, 0xbf23f597u, 0x405c604eu, 0x3daf6c08u},
              "d_in 4, 8 positions");
  // 50257 * 3 has a tail of 3 elements; 6 x 3 positions: a tail too
  expect_bits(chapter2_embeddings(kJourney, 3, 123, 6),
              {0x3f54c036u, 0x3fab6d9au, 0xbf5bd2fcu, 0x400b3613u, 0xbf07162fu, 0xc0152ec4u,
               0x40117978u, 0x3f86949eu, 0xbf1d6f48u, 0x3fa3953fu, 0xc00e3eb4u, 0xbfaa997cu,
               0xc02c50dcu, 0x4045c3c9u, 0x3f314955u, 0xbf4221dcu, 0x3ebab026u, 0xbf7fb0e0u},
              "d_in 3, 6 positions");
  // 6 x 1 positions: fewer than 16 normals, PyTorch's double Box-Muller path
  expect_bits(chapter2_embeddings(kJourney, 1, 123, 6),
              {0x3d96c1f0u, 0xbf60b9dbu, 0xbea88cfeu, 0xbedb364cu, 0xbfcfbf62u, 0xbfe4fe10u},
              "d_in 1, 6 positions");
}

TEST(Chapter2Embeddings, TextGivesGpt2TokensAndTheirRows) {
  const TextInputs text = tokenize_text("Your journey starts with one step", 4, 123, 8);
  EXPECT_EQ(text.ids, kJourney);
  EXPECT_EQ(text.tokens,
            (std::vector<std::string>{"Your", " journey", " starts", " with", " one", " step"}));
  EXPECT_EQ(text.vocab_size, kGpt2VocabSize);
  const Inputs inputs = chapter2_inputs(text);
  EXPECT_EQ(inputs.tokens, text.tokens);
  EXPECT_EQ(inputs.embeddings, chapter2_embeddings(kJourney, 4, 123, 8));
  EXPECT_THROW(tokenize_text("", 4, 123), ParseError);
  EXPECT_THROW(chapter2_inputs(tokenize_text("a b c", 4, 123, 2)), ParseError);
}

TEST(Chapter2Embeddings, RefusesWhatTorchWouldRefuse) {
  auto message = [](auto&& call) {
    try {
      call();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  EXPECT_NE(message([] {
              chapter2_embeddings(std::vector<int>{1, 50257}, 3, 123);
            }).find("token 1 has id 50257, outside the vocabulary's 0..50256"),
            std::string::npos);
  EXPECT_NE(
      message([] { chapter2_embeddings(std::vector<int>{-1}, 3, 123); }).find("token 0 has id -1"),
      std::string::npos);
  EXPECT_NE(message([] {
              chapter2_embeddings(kJourney, 3, 123, 4);
            }).find("6 tokens but the positional embedding has 4 positions"),
            std::string::npos);
  EXPECT_NE(message([] { chapter2_embeddings(std::vector<int>{}, 3, 123); }).find("no token ids"),
            std::string::npos);
  EXPECT_NE(message([] { chapter2_embeddings(kJourney, 0, 123); }).find("d_in (0)"),
            std::string::npos);
  EXPECT_NE(message([] {
              chapter2_embeddings(std::vector<int>{9}, 3, 123, 0, 5);
            }).find("outside the vocabulary's 0..4"),
            std::string::npos);
}

}  // namespace
}  // namespace attnscope::core
