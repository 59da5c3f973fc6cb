// EncodePngRgb / EncodePngGray16 (see reel/video.h).
#include <algorithm>

#include "reel/video.h"
#include "video/ffmpeg_util.h"

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
