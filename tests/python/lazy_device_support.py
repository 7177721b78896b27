"""What the lazy device's test modules share: the torch device, handed out by
xm.xla_device() around their own tests only. Importing lazy_device makes
xm.xla_device() hand out the torch device, process-wide; pytest imports every
test module before running any, so the native tests (test_runtime.py checks
xla_device() is 'cpu:0') would see it. Import this after torch is known to be
installed (pytest.importorskip)."""
import pytest

from lazytrain.torch_backend import lazy_device

lazy_device.enable(False)
DEV = lazy_device.device()


@pytest.fixture(autouse=True)
def torch_device_handed_out():
    previous = lazy_device.enable(True)
    yield
    lazy_device.enable(previous)


def optimizer_step(optimizer, device):
    """The step's update: on the lazy device xm.optimizer_step then
    xm.mark_step (the whole step one graph), elsewhere optimizer.step()."""
    import lazytrain.core.xla_model as xm
    if device.type == "lazytrain":
        xm.optimizer_step(optimizer)
        xm.mark_step()
    else:
        optimizer.step()
