// Internal: RAII owners of libzip handles and the libzip error text, shared by the
// packer and the slice inspector. libzip's headers stay out of public headers.
#pragma once

#include <zip.h>

#include <memory>
#include <string>

namespace reel::internal {

struct ZipDiscard {
  // zip_discard closes without writing: an archive that was not zip_close()d
  // successfully leaves nothing behind but what libzip already wrote.
  void operator()(zip_t* za) const { zip_discard(za); }
};
using ZipArchive = std::unique_ptr<zip_t, ZipDiscard>;

struct ZipFileClose {
  void operator()(zip_file_t* zf) const { zip_fclose(zf); }
};
using ZipFile = std::unique_ptr<zip_file_t, ZipFileClose>;

// The message of a libzip error code as returned by zip_open().
inline std::string ZipErrorText(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string text = zip_error_strerror(&error);
  zip_error_fini(&error);
  return text;
}

// The message of the archive's last error.
inline std::string ZipErrorText(zip_t* za) { return zip_strerror(za); }

}  // namespace reel::internal
