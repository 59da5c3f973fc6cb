"""Let PyPI's torchvision import beside the CPU-only torch of the peer venvs.

PyPI's torchvision wheels for Linux x86_64 are CUDA builds: their _C.so links libtorch_cuda.so and
libc10_cuda.so, which a CPU torch does not ship, so torchvision cannot load its C++ ops. torchvision
copes with that for every op but two: _meta_registrations.py registers fake kernels for
torchvision::nms and torchvision::qnms without checking, and the import dies with "operator
torchvision::nms does not exist". LeRobot's dataset code imports torchvision at module level
(transforms.ToTensor for image features, torchvision.io for its 'pyav' backend) but needs none of
its C++ ops.

Installed into a peer venv's site-packages with a .pth line (`import reel_torchvision_ops`), this
module adds an import hook that, the first time `torchvision` is imported, defines the schemas of
those two operators (so the fake registrations succeed) when torch has no CUDA. Nothing is imported
at interpreter start-up; torchvision's ops stay unavailable (they raise "Couldn't load custom C++
ops"), which LeRobot's dataset, decoding and writing paths never call.
"""

import importlib.abc
import sys


class _Hook(importlib.abc.MetaPathFinder):
    done = False

    def find_spec(self, name, path=None, target=None):
        if name != "torchvision" or _Hook.done:
            return None
        _Hook.done = True
        try:
            import torch

            if torch.version.cuda is None:
                lib = torch.library.Library("torchvision", "DEF")
                lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
                lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
                _Hook.lib = lib  # keep the registration alive
        except Exception:  # noqa: BLE001 - never break an import because of the hook
            pass
        return None  # let the normal finders import torchvision


if not any(isinstance(f, _Hook) for f in sys.meta_path):
    sys.meta_path.insert(0, _Hook())
