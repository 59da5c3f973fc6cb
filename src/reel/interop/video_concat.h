// Moved to video/video_concat.h (FFmpeg stays inside video/). This forwarding header
// remains only for interop/import.cc until its include is switched; new code includes
// "video/video_concat.h".
#pragma once

#include "video/video_concat.h"
