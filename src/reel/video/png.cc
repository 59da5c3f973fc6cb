// EncodePngRgb / EncodePngGray16 (see reel/video.h) and DecodePngGray16 (video/png_decode.h).
#include <algorithm>
#include <cstring>

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

Result<GrayImage16> DecodePngGray16(std::string_view png, const std::string& where, int64_t max_pixels) {
  if (png.empty() || png.size() > static_cast<size_t>(INT32_MAX) - AV_INPUT_BUFFER_PADDING_SIZE)
    return Status::Invalid(where + ": png.size: " + std::to_string(png.size()) + " bytes is not a PNG image");
  // The decoder allocates the frame its header declares before it reads a pixel, so a
  // 60-byte file declaring 20000 x 20000 would cost 800 MB: the size in IHDR (the first
  // chunk, width and height at bytes 16-23) is bounded first, and the decoder is held to
  // the same bound (AVCodecContext::max_pixels) for any frame it would allocate.
  if (png.size() >= 24 && png.substr(12, 4) == "IHDR") {
    const auto be32 = [&](size_t at) {
      return uint64_t{static_cast<uint8_t>(png[at])} << 24 | uint64_t{static_cast<uint8_t>(png[at + 1])} << 16 |
             uint64_t{static_cast<uint8_t>(png[at + 2])} << 8 | uint64_t{static_cast<uint8_t>(png[at + 3])};
    };
    const uint64_t width = be32(16), height = be32(20);
    if (width * height > static_cast<uint64_t>(max_pixels))
      return Status::Invalid(where + ": png.size: " + std::to_string(width) + "x" + std::to_string(height) +
                             ", over the limit of " + std::to_string(max_pixels) + " pixels");
  }
  const AVCodec* codec = avcodec_find_decoder(AV_CODEC_ID_PNG);
  if (!codec) return Status::NotSupported("this FFmpeg build has no PNG decoder");
  CodecContextPtr ctx(avcodec_alloc_context3(codec));
  FramePtr frame(av_frame_alloc());
  PacketPtr packet(av_packet_alloc());
  if (!ctx || !frame || !packet) return Status::IOError(where + ": PNG: out of memory");
  ctx->thread_count = 1;
  ctx->max_pixels = std::max<int64_t>(max_pixels, 1);
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
