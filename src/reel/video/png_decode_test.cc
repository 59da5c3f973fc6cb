// DecodePngGray16: 16-bit gray PNGs read back value for value (both from reel's encoder and
// from bytes written by hand: stored deflate blocks, CRC-32 and Adler-32 computed here); anything else refused with the file and the value.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "reel/video.h"
#include "video/png_decode.h"

namespace reel::video {
namespace {

std::string Be32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                     static_cast<char>(v)};
}

uint32_t Crc32(const std::string& s) {  // the PNG chunk CRC (ISO 3309), bit by bit
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

std::string Chunk(const std::string& kind, const std::string& data) {
  const std::string body = kind + data;
  return Be32(static_cast<uint32_t>(data.size())) + body + Be32(Crc32(body));
}

// A zlib stream of one stored (uncompressed) deflate block; data under 64 KiB.
std::string Zlib(const std::string& data) {
  uint32_t a = 1, b = 0;
  for (unsigned char c : data) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  const uint16_t len = static_cast<uint16_t>(data.size()), nlen = static_cast<uint16_t>(~len);
  std::string out = {'\x78', '\x01', '\x01', static_cast<char>(len & 0xff), static_cast<char>(len >> 8),
                     static_cast<char>(nlen & 0xff), static_cast<char>(nlen >> 8)};
  return out + data + Be32(b << 16 | a);
}

// A PNG by hand: IHDR(width, height, depth, colour type 0), one IDAT of filter-0 rows.
std::string HandPng(int w, int h, int depth, const std::string& samples) {
  std::string ihdr = Be32(w) + Be32(h) + std::string{static_cast<char>(depth), 0, 0, 0, 0};
  const size_t line = static_cast<size_t>(w) * depth / 8;
  std::string raw;
  for (int y = 0; y < h; ++y) raw += std::string(1, '\0') + samples.substr(y * line, line);
  return std::string("\x89PNG\r\n\x1a\n", 8) + Chunk("IHDR", ihdr) + Chunk("IDAT", Zlib(raw)) + Chunk("IEND", "");
}

TEST(DecodePngGray16, ReadsReelsOwnEncodeValueForValue) {
  std::vector<uint16_t> mm(7 * 5);
  for (size_t i = 0; i < mm.size(); ++i) mm[i] = static_cast<uint16_t>(i * 1871 + 3);
  mm[0] = 0;
  mm[1] = 65535;
  auto png = EncodePngGray16(7, 5, mm);
  ASSERT_TRUE(png.ok()) << png.status().ToString();
  auto image = DecodePngGray16(*png, "x.png");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  EXPECT_EQ(image->width, 7);
  EXPECT_EQ(image->height, 5);
  EXPECT_EQ(image->values, mm);
}

TEST(DecodePngGray16, ReadsAHandWrittenPng16) {
  std::string samples;
  for (int i = 0; i < 6; ++i) samples += std::string{static_cast<char>(i * 40), static_cast<char>(255 - i)};
  auto image = DecodePngGray16(HandPng(3, 2, 16, samples), "hand.png");
  ASSERT_TRUE(image.ok()) << image.status().ToString();
  for (int i = 0; i < 6; ++i) EXPECT_EQ(image->values[i], (i * 40) << 8 | (255 - i)) << i;
}

TEST(DecodePngGray16, RefusesEightBitGarbageAndHugeImages) {
  auto eight = DecodePngGray16(HandPng(4, 2, 8, std::string(8, '\x10')), "d/000004.png");
  ASSERT_FALSE(eight.ok());
  EXPECT_NE(eight.status().message().find("d/000004.png: png.pixel_format: gray"), std::string::npos)
      << eight.status().ToString();
  auto garbage = DecodePngGray16("\x89PNG not a png", "g.png");
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("g.png"), std::string::npos);
  EXPECT_FALSE(DecodePngGray16("", "e.png").ok());
  std::vector<uint16_t> mm(64 * 64, 7);
  auto big = DecodePngGray16(*EncodePngGray16(64, 64, mm), "big.png", 1000);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("over the limit of 1000 pixels"), std::string::npos);
}

// A PNG of a few bytes may declare any size, and the decoder allocates the frame it
// declares before it reads a pixel (found by fuzz_png16, fuzz/crashes/README.md PNG-ALLOC: a
// 2 KB file declaring 16000 x 16000 cost 53 s and 2.3 GB): a size over the limit is refused
// from IHDR, naming it.
TEST(DecodePngGray16, RefusesADeclaredSizeOverTheLimitBeforeDecoding) {
  const std::string ihdr = Be32(20000) + Be32(20000) + std::string{16, 0, 0, 0, 0};
  const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + Chunk("IHDR", ihdr) +
                          Chunk("IDAT", Zlib(std::string(1, '\0'))) + Chunk("IEND", "");
  auto image = DecodePngGray16(png, "d/000001.png");
  ASSERT_FALSE(image.ok());
  EXPECT_NE(image.status().message().find("d/000001.png: png.size: 20000x20000, over the limit of 67108864 pixels"),
            std::string::npos)
      << image.status().ToString();
  auto small = DecodePngGray16(HandPng(65, 64, 16, std::string(65 * 64 * 2, '\0')), "s.png", 4096);
  ASSERT_FALSE(small.ok());
  EXPECT_NE(small.status().message().find("s.png: png.size: 65x64, over the limit of 4096 pixels"), std::string::npos)
      << small.status().ToString();
  EXPECT_TRUE(DecodePngGray16(HandPng(64, 64, 16, std::string(64 * 64 * 2, '\0')), "t.png", 4096).ok());
}

}  // namespace
}  // namespace reel::video
