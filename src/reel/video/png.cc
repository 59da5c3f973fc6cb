// EncodePngRgb / EncodePngGray16 (see reel/video.h) and DecodePngGray16 (video/png_decode.h).
#include <algorithm>
#include <cstring>
#include <optional>
#include <span>

#include <zlib.h>

extern "C" {
#include <libavutil/pixdesc.h>
}

#include "reel/video.h"
#include "video/ffmpeg_util.h"
#include "video/png_decode.h"

namespace reel {

namespace {

// `fill(row, y)` writes line y of the image in `format`.
template <typename Fill>
Result<std::string> EncodePng(int width, int height, AVPixelFormat format, Fill fill) {
  if (width <= 0 || height <= 0)
    return Status::Invalid("PNG size must be positive, got " + std::to_string(width) + "x" +
                           std::to_string(height));
  const AVCodec* codec = avcodec_find_encoder(AV_CODEC_ID_PNG);
  if (!codec) return Status::NotSupported("this FFmpeg build has no PNG encoder");
  video::CodecContextPtr ctx(avcodec_alloc_context3(codec));
  video::FramePtr frame(av_frame_alloc());
  video::PacketPtr packet(av_packet_alloc());
  if (!ctx || !frame || !packet) return Status::IOError("PNG: out of memory");
  ctx->width = width;
  ctx->height = height;
  ctx->pix_fmt = format;
  ctx->time_base = {1, 1};
  int rc = avcodec_open2(ctx.get(), codec, nullptr);
  if (rc < 0) return video::AvStatus("PNG", "opening the encoder", rc);
  frame->format = format;
  frame->width = width;
  frame->height = height;
  rc = av_frame_get_buffer(frame.get(), 0);
  if (rc < 0) return video::AvStatus("PNG", "allocating the frame", rc);
  for (int y = 0; y < height; ++y) fill(frame->data[0] + static_cast<ptrdiff_t>(y) * frame->linesize[0], y);
  rc = avcodec_send_frame(ctx.get(), frame.get());
  if (rc >= 0) rc = avcodec_send_frame(ctx.get(), nullptr);
  if (rc >= 0) rc = avcodec_receive_packet(ctx.get(), packet.get());
  if (rc < 0) return video::AvStatus("PNG", "encoding", rc);
  return std::string(reinterpret_cast<const char*>(packet->data), static_cast<size_t>(packet->size));
}

}  // namespace

Result<std::string> EncodePngRgb(int width, int height, std::span<const uint8_t> rgb) {
  const size_t line = static_cast<size_t>(std::max(width, 0)) * 3;
  if (rgb.size() != line * static_cast<size_t>(std::max(height, 0)))
    return Status::Invalid("PNG: " + std::to_string(rgb.size()) + " bytes for a " + std::to_string(width) +
                           "x" + std::to_string(height) + " RGB24 image");
  return EncodePng(width, height, AV_PIX_FMT_RGB24,
                   [&](uint8_t* row, int y) { std::copy_n(rgb.data() + y * line, line, row); });
}

Result<std::string> EncodePngGray16(int width, int height, std::span<const uint16_t> gray) {
  const size_t w = static_cast<size_t>(std::max(width, 0));
  if (gray.size() != w * static_cast<size_t>(std::max(height, 0)))
    return Status::Invalid("PNG: " + std::to_string(gray.size()) + " values for a " +
                           std::to_string(width) + "x" + std::to_string(height) + " gray image");
  // PNG stores 16-bit samples big-endian.
  return EncodePng(width, height, AV_PIX_FMT_GRAY16BE, [&](uint8_t* row, int y) {
    for (size_t x = 0; x < w; ++x) {
      const uint16_t v = gray[y * w + x];
      row[2 * x] = static_cast<uint8_t>(v >> 8);
      row[2 * x + 1] = static_cast<uint8_t>(v & 0xff);
    }
  });
}

}  // namespace reel

namespace reel::video {

namespace {

uint32_t Be32(std::string_view b, size_t at) {
  return uint32_t{static_cast<uint8_t>(b[at])} << 24 | uint32_t{static_cast<uint8_t>(b[at + 1])} << 16 |
         uint32_t{static_cast<uint8_t>(b[at + 2])} << 8 | uint32_t{static_cast<uint8_t>(b[at + 3])};
}

// What IHDR declares (PNG specification §11.2.2).
struct PngHeader {
  uint64_t width = 0, height = 0;
  int bits_per_pixel = 0;  // bit depth x samples per pixel
  bool interlaced = false;
};

Result<PngHeader> ReadHeader(std::string_view ihdr, const std::string& where, int64_t max_pixels) {
  PngHeader h;
  h.width = Be32(ihdr, 0);
  h.height = Be32(ihdr, 4);
  const int depth = static_cast<uint8_t>(ihdr[8]), colour = static_cast<uint8_t>(ihdr[9]);
  const int interlace = static_cast<uint8_t>(ihdr[12]);
  if (h.width == 0 || h.height == 0 || h.width * h.height > static_cast<uint64_t>(max_pixels))
    return Status::Invalid(where + ": png.size: " + std::to_string(h.width) + "x" + std::to_string(h.height) +
                           (h.width && h.height ? ", over the limit of " + std::to_string(max_pixels) + " pixels"
                                                : " is not an image"));
  static const int kSamples[7] = {1, 0, 3, 1, 2, 0, 4};  // by colour type; 0: none such
  const bool depth_ok = depth == 1 || depth == 2 || depth == 4 || depth == 8 || depth == 16;
  if (!depth_ok || colour > 6 || kSamples[colour] == 0 || interlace > 1)
    return Status::Invalid(where + ": png.header: bit depth " + std::to_string(depth) + ", colour type " +
                           std::to_string(colour) + ", interlace " + std::to_string(interlace) + " is not a PNG image");
  h.bits_per_pixel = depth * kSamples[colour];
  h.interlaced = interlace == 1;
  return h;
}

// The bytes IDAT must inflate to: per line of each pass (Adam7's seven when interlaced), a
// filter byte and the line's samples.
uint64_t ImageDataBytes(const PngHeader& h) {
  struct Pass { uint64_t x0, y0, dx, dy; };
  static const Pass kWhole[1] = {{0, 0, 1, 1}};
  static const Pass kAdam7[7] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                 {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};
  uint64_t total = 0;
  for (const Pass& p : h.interlaced ? std::span<const Pass>(kAdam7) : std::span<const Pass>(kWhole)) {
    const uint64_t w = h.width > p.x0 ? (h.width - p.x0 + p.dx - 1) / p.dx : 0;
    const uint64_t lines = h.height > p.y0 ? (h.height - p.y0 + p.dy - 1) / p.dy : 0;
    if (w && lines) total += lines * (1 + (w * h.bits_per_pixel + 7) / 8);
  }
  return total;
}

// Inflates the concatenated IDAT data as it comes, counting what it gives.
class IdatStream {
 public:
  IdatStream() { ok_ = inflateInit(&z_) == Z_OK; }
  ~IdatStream() { inflateEnd(&z_); }
  IdatStream(const IdatStream&) = delete;
  IdatStream& operator=(const IdatStream&) = delete;

  // Feeds one IDAT's bytes; an error names the zlib failure, or more bytes than `expected`.
  Status Feed(std::string_view data, uint64_t expected, const std::string& where) {
    if (!ok_) return Status::IOError(where + ": PNG: out of memory");
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z_.avail_in = static_cast<uInt>(data.size());
    while (z_.avail_in > 0 && !ended_) {
      z_.next_out = scratch_;
      z_.avail_out = sizeof scratch_;
      const int rc = inflate(&z_, Z_NO_FLUSH);
      if (rc == Z_STREAM_END) ended_ = true;
      else if (rc != Z_OK)
        return Status::Invalid(where + ": png.data: the image data does not inflate (zlib: " +
                               (z_.msg ? z_.msg : std::to_string(rc)) + ")");
      if (z_.total_out > expected)
        return Status::Invalid(where + ": png.data: the image data inflates to more than the " +
                               std::to_string(expected) + " bytes its header declares");
    }
    return Status::OK();
  }
  bool ended() const { return ended_; }
  uint64_t inflated() const { return z_.total_out; }

 private:
  z_stream z_{};
  bool ok_ = false, ended_ = false;
  Bytef scratch_[1 << 16];
};

// The structure FFmpeg's PNG decoder does not hold a file to: it decodes a truncated image
// into a frame with the missing lines left as they were and returns success (issue 27,
// finding 5: 720 of 768 pixels of an interlaced depth frame wrong, encoded "losslessly").
// The signature; every chunk within the file with its CRC-32 right; IHDR first and of a size
// under max_pixels (the decoder allocates the frame it declares before it reads a pixel);
// IDAT chunks next to each other, inflating to exactly the bytes IHDR implies, the zlib
// stream ended; IEND.
Status CheckPngStructure(std::string_view png, const std::string& where, int64_t max_pixels) {
  static constexpr std::string_view kSignature("\x89PNG\r\n\x1a\n", 8);
  if (png.substr(0, 8) != kSignature) return Status::Invalid(where + ": png.signature: not a PNG file");
  std::optional<PngHeader> header;
  uint64_t expected = 0;
  IdatStream idat;
  bool idat_seen = false, idat_done = false;
  for (size_t at = 8;;) {
    if (png.size() - at < 12)
      return Status::Invalid(where + ": png.chunk: the file ends at byte " + std::to_string(png.size()) +
                             " without an IEND chunk (truncated)");
    const uint64_t length = Be32(png, at);
    const std::string_view kind = png.substr(at + 4, 4);
    const std::string name = "chunk " + std::string(kind) + " at byte " + std::to_string(at);
    if (length > png.size() - at - 12)
      return Status::Invalid(where + ": png.chunk: " + name + " declares " + std::to_string(length) + " bytes; " +
                             std::to_string(png.size() - at - 12) + " follow (truncated)");
    const std::string_view data = png.substr(at + 8, length);
    const uint32_t crc = static_cast<uint32_t>(
        crc32(crc32(0L, nullptr, 0), reinterpret_cast<const Bytef*>(png.data() + at + 4), static_cast<uInt>(length + 4)));
    if (crc != Be32(png, at + 8 + length))
      return Status::Invalid(where + ": png.crc: " + name + " has a wrong CRC-32 (damaged)");
    at += 12 + length;
    if (!header) {
      if (kind != "IHDR" || length != 13)
        return Status::Invalid(where + ": png.chunk: the first chunk is " + std::string(kind) + " of " +
                               std::to_string(length) + " bytes, not IHDR of 13");
      REEL_ASSIGN_OR_RETURN(PngHeader h, ReadHeader(data, where, max_pixels));
      header = h;
      expected = ImageDataBytes(h);
    } else if (kind == "IDAT") {
      if (idat_done) return Status::Invalid(where + ": png.chunk: " + name + ": IDAT chunks are not consecutive");
      idat_seen = true;
      REEL_RETURN_IF_ERROR(idat.Feed(data, expected, where));
    } else if (kind == "IEND") {
      break;
    } else if (idat_seen) {
      idat_done = true;
    }
  }
  if (!idat.ended() || idat.inflated() != expected)
    return Status::Invalid(where + ": png.data: the image data inflates to " + std::to_string(idat.inflated()) +
                           " of the " + std::to_string(expected) + " bytes its header declares" +
                           (idat.ended() ? "" : ", its zlib stream unfinished") + " (truncated or damaged)");
  return Status::OK();
}

}  // namespace

Result<GrayImage16> DecodePngGray16(std::string_view png, const std::string& where, int64_t max_pixels) {
  if (png.empty() || png.size() > static_cast<size_t>(INT32_MAX) - AV_INPUT_BUFFER_PADDING_SIZE)
    return Status::Invalid(where + ": png.size: " + std::to_string(png.size()) + " bytes is not a PNG image");
  REEL_RETURN_IF_ERROR(CheckPngStructure(png, where, max_pixels));
  const AVCodec* codec = avcodec_find_decoder(AV_CODEC_ID_PNG);
  if (!codec) return Status::NotSupported("this FFmpeg build has no PNG decoder");
  CodecContextPtr ctx(avcodec_alloc_context3(codec));
  FramePtr frame(av_frame_alloc());
  PacketPtr packet(av_packet_alloc());
  if (!ctx || !frame || !packet) return Status::IOError(where + ": PNG: out of memory");
  ctx->thread_count = 1;
  // The structure check held IHDR to max_pixels; FFmpeg checks its own padded size (width
  // rounded up to its alignment), so it is given room for that, no more.
  ctx->max_pixels = std::max<int64_t>(max_pixels, 1) * 2;
  int rc = avcodec_open2(ctx.get(), codec, nullptr);
  if (rc < 0) return AvStatus(where, "opening the PNG decoder", rc);
  rc = av_new_packet(packet.get(), static_cast<int>(png.size()));  // zero padding added by FFmpeg
  if (rc < 0) return AvStatus(where, "PNG packet", rc);
  std::memcpy(packet->data, png.data(), png.size());
  rc = avcodec_send_packet(ctx.get(), packet.get());
  if (rc >= 0) rc = avcodec_send_packet(ctx.get(), nullptr);
  if (rc >= 0) rc = avcodec_receive_frame(ctx.get(), frame.get());
  if (rc < 0) return AvStatus(where, "decoding the PNG", rc);
  const auto format = static_cast<AVPixelFormat>(frame->format);
  if (format != AV_PIX_FMT_GRAY16BE && format != AV_PIX_FMT_GRAY16LE) {
    const char* name = av_get_pix_fmt_name(format);
    return Status::Invalid(where + ": png.pixel_format: " + (name ? name : "unknown") +
                           "; a depth frame is a 16-bit gray PNG (gray16)");
  }
  const int64_t pixels = static_cast<int64_t>(frame->width) * frame->height;
  if (frame->width <= 0 || frame->height <= 0 || pixels > max_pixels)
    return Status::Invalid(where + ": png.size: " + std::to_string(frame->width) + "x" +
                           std::to_string(frame->height) + ", over the limit of " + std::to_string(max_pixels) +
                           " pixels");
  GrayImage16 out;
  out.width = frame->width;
  out.height = frame->height;
  out.values.resize(static_cast<size_t>(pixels));
  const bool big = format == AV_PIX_FMT_GRAY16BE;
  for (int y = 0; y < out.height; ++y) {
    const uint8_t* row = frame->data[0] + static_cast<ptrdiff_t>(y) * frame->linesize[0];
    uint16_t* dst = out.values.data() + static_cast<size_t>(y) * out.width;
    for (int x = 0; x < out.width; ++x) {
      const uint8_t a = row[2 * x], b = row[2 * x + 1];
      dst[x] = big ? static_cast<uint16_t>(a << 8 | b) : static_cast<uint16_t>(b << 8 | a);
    }
  }
  return out;
}

}  // namespace reel::video
