// Internal: the HTTP edge of the import server. Owns the cpp-httplib server, maps
// requests to ImportSlice and answers. HTTP types appear only here and in
// deadline_server.h (its connection loop).
#pragma once

#include <memory>

#include "reel/serve.h"

namespace reel::serve {

class HttpEdge {
 public:
  static Result<std::unique_ptr<HttpEdge>> Make(const ServeConfig& config);
  virtual ~HttpEdge() = default;
  virtual Status Listen() = 0;
  virtual int port() const = 0;
  virtual bool WaitUntilListening(double timeout_s) const = 0;
  virtual void Stop() = 0;
};

}  // namespace reel::serve
