// DecodePngGray16: 16-bit gray PNGs read back value for value (both from reel's encoder and
// from bytes written by hand: stored deflate blocks, CRC-32 and Adler-32 computed here); anything else refused with the file and the value.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "reel/video.h"
#include "video/png_decode.h"
#include "testing/status_matchers.h"

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

const std::string kSignature("\x89PNG\r\n\x1a\n", 8);

std::string Ihdr(int w, int h, int depth, int interlace) {
  return Chunk("IHDR", Be32(w) + Be32(h) + std::string{static_cast<char>(depth), 0, 0, 0, static_cast<char>(interlace)});
}

// A PNG by hand: IHDR(width, height, depth, colour type 0), one IDAT of filter-0 rows.
std::string HandPng(int w, int h, int depth, const std::string& samples) {
  const size_t line = static_cast<size_t>(w) * depth / 8;
  std::string raw;
  for (int y = 0; y < h; ++y) raw += std::string(1, '\0') + samples.substr(y * line, line);
  return kSignature + Ihdr(w, h, depth, 0) + Chunk("IDAT", Zlib(raw)) + Chunk("IEND", "");
}

// The image data of an interlaced 16-bit gray image (PNG specification §8.2, Adam7): each
// pass's lines, filter byte 0, of the pixels (x0 + i dx, y0 + j dy); value(x, y) is the sample.
std::string Adam7Raw(int w, int h, uint16_t (*value)(int, int)) {
  static const int kPass[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                  {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  std::string raw;
  for (const auto& p : kPass) {
    if (p[0] >= w || p[1] >= h) continue;
    for (int y = p[1]; y < h; y += p[3]) {
      raw += '\0';
      for (int x = p[0]; x < w; x += p[2]) raw += std::string{static_cast<char>(value(x, y) >> 8), static_cast<char>(value(x, y))};
    }
  }
  return raw;
}

uint16_t Ramp(int x, int y) { return static_cast<uint16_t>(x * 1000 + y * 7 + 1); }

TEST(DecodePngGray16, ReadsReelsOwnEncodeValueForValue) {
  std::vector<uint16_t> mm(7 * 5);
  for (size_t i = 0; i < mm.size(); ++i) mm[i] = static_cast<uint16_t>(i * 1871 + 3);
  mm[0] = 0;
  mm[1] = 65535;
  auto png = EncodePngGray16(7, 5, mm);
  ASSERT_OK(png);
  auto image = DecodePngGray16(*png, "x.png");
  ASSERT_OK(image);
  EXPECT_EQ(image->width, 7);
  EXPECT_EQ(image->height, 5);
  EXPECT_EQ(image->values, mm);
}

TEST(DecodePngGray16, ReadsAHandWrittenPng16) {
  std::string samples;
  for (int i = 0; i < 6; ++i) samples += std::string{static_cast<char>(i * 40), static_cast<char>(255 - i)};
  auto image = DecodePngGray16(HandPng(3, 2, 16, samples), "hand.png");
  ASSERT_OK(image);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(image->values[i], (i * 40) << 8 | (255 - i)) << i;
}

TEST(DecodePngGray16, RefusesEightBitGarbageAndHugeImages) {
  auto eight = DecodePngGray16(HandPng(4, 2, 8, std::string(8, '\x10')), "d/000004.png");
  ASSERT_FALSE(eight.ok());
  EXPECT_THAT(eight.status().message(), ::testing::HasSubstr("d/000004.png: png.pixel_format: gray"))
      << eight.status().ToString();
  auto garbage = DecodePngGray16("\x89PNG not a png", "g.png");
  ASSERT_FALSE(garbage.ok());
  EXPECT_THAT(garbage.status().message(), ::testing::HasSubstr("g.png"));
  EXPECT_FALSE(DecodePngGray16("", "e.png").ok());
  std::vector<uint16_t> mm(64 * 64, 7);
  auto big = DecodePngGray16(*EncodePngGray16(64, 64, mm), "big.png", 1000);
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(big.status().message(), ::testing::HasSubstr("over the limit of 1000 pixels"));
}

// A PNG of a few bytes may declare any size, and the decoder allocates the frame it
// declares before it reads a pixel (found by fuzz_png16, fuzz/crashes/README.md PNG-ALLOC: a
// 2 KB file declaring 16000 x 16000 cost 53 s and 2.3 GB): a size over the limit is refused
// from IHDR, naming it.
TEST(DecodePngGray16, RefusesADeclaredSizeOverTheLimitBeforeDecoding) {
  const std::string ihdr = Be32(20000) + Be32(20000) + std::string{16, 0, 0, 0, 0};
  const std::string png = kSignature + Chunk("IHDR", ihdr) +
                          Chunk("IDAT", Zlib(std::string(1, '\0'))) + Chunk("IEND", "");
  auto image = DecodePngGray16(png, "d/000001.png");
  ASSERT_FALSE(image.ok());
  EXPECT_THAT(image.status().message(), ::testing::HasSubstr("d/000001.png: png.size: 20000x20000, over the limit of 8388608 pixels"))
      << image.status().ToString();
  auto small = DecodePngGray16(HandPng(65, 64, 16, std::string(65 * 64 * 2, '\0')), "s.png", 4096);
  ASSERT_FALSE(small.ok());
  EXPECT_THAT(small.status().message(), ::testing::HasSubstr("s.png: png.size: 65x64, over the limit of 4096 pixels"))
      << small.status().ToString();
  EXPECT_OK(DecodePngGray16(HandPng(64, 64, 16, std::string(64 * 64 * 2, '\0')), "t.png", 4096));
}

// The shape of finding 5 (issue 27): a 32x24 interlaced depth frame whose image data stops
// after the first passes, in a well-formed zlib stream. FFmpeg's decoder returns it with
// 720 of its 768 pixels never written, and migrate encoded that "losslessly": refused now,
// and the whole frame still reads value for value (so the Adam7 arithmetic above is right).
TEST(DecodePngGray16, AnInterlacedFrameIsReadWholeAndATruncatedOneRefused) {
  const std::string raw = Adam7Raw(32, 24, Ramp);
  auto whole = DecodePngGray16(kSignature + Ihdr(32, 24, 16, 1) + Chunk("IDAT", Zlib(raw)) + Chunk("IEND", ""), "w.png");
  ASSERT_OK(whole);
  for (int y = 0; y < 24; ++y)
    for (int x = 0; x < 32; ++x) ASSERT_EQ(whole->values[y * 32 + x], Ramp(x, y)) << x << "," << y;
  const std::string cut = raw.substr(0, raw.size() / 8);
  auto truncated = DecodePngGray16(kSignature + Ihdr(32, 24, 16, 1) + Chunk("IDAT", Zlib(cut)) + Chunk("IEND", ""),
                                   "d/000005.png");
  ASSERT_FALSE(truncated.ok());
  EXPECT_THAT(truncated.status().message(), ::testing::HasSubstr("d/000005.png: png.data: the image data inflates to " +
                                              std::to_string(cut.size()) + " of the " + std::to_string(raw.size()) +
                                              " bytes its header declares"))
      << truncated.status().ToString();
}

// Damage of every other kind the decoder would pass over: lines missing from a plain image,
// a zlib stream cut short, a chunk's CRC-32 wrong, a chunk running past the end, no IEND.
TEST(DecodePngGray16, DamagedStructureIsRefusedNamingTheRule) {
  std::string samples(8 * 6 * 2, '\x11');
  const std::string good = HandPng(8, 6, 16, samples);
  ASSERT_OK(DecodePngGray16(good, "good.png"));
  std::string rows;
  for (int y = 0; y < 5; ++y) rows += std::string(1, '\0') + std::string(16, '\x11');  // 5 of 6 lines
  const std::string stream = Zlib(rows + std::string(1, '\0') + std::string(16, '\x11'));
  std::string bad_crc = good;
  bad_crc[bad_crc.size() - 30] ^= 1;  // a sample byte inside IDAT
  const std::pair<std::string, std::string> cases[] = {
      {kSignature + Ihdr(8, 6, 16, 0) + Chunk("IDAT", Zlib(rows)) + Chunk("IEND", ""), "png.data: the image data inflates to 85 of the 102"},
      {kSignature + Ihdr(8, 6, 16, 0) + Chunk("IDAT", stream.substr(0, 60)) + Chunk("IEND", ""), "png.data: the image data inflates to 53 of the 102 bytes its header declares, its zlib stream unfinished"},
      {bad_crc, "png.crc: chunk IDAT at byte 33 has a wrong CRC-32"},
      {good.substr(0, good.size() - 20), "png.chunk: chunk IDAT at byte 33 declares"},
      {good.substr(0, good.size() - 12), "png.chunk: the file ends at byte"},
      {kSignature + Chunk("IDAT", stream) + Chunk("IEND", ""), "png.chunk: the first chunk is IDAT"},
  };
  for (const auto& [png, message] : cases) {
    auto image = DecodePngGray16(png, "d/x.png");
    ASSERT_FALSE(image.ok()) << message;
    EXPECT_THAT(image.status().message(), ::testing::HasSubstr("d/x.png: " + message)) << image.status().ToString();
  }
}

}  // namespace
}  // namespace reel::video
