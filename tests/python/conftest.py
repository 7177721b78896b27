"""pytest set-up for lazytrain's Python tests: each test starts with cleared
metrics, the lazy mode, and no pending work from the test before."""
import numpy as np
import pytest

import lazytrain as lt


@pytest.fixture(autouse=True)
def fresh_runtime():
    lt.sync(wait=True)
    lt.execution_mode("lazy")
    lt.debug.metrics.clear_all()
    lt.manual_seed(0)
    yield
    lt.execution_mode("lazy")
    lt.set_detect_anomaly(False)
    lt.wait_device_ops()


def assert_close(actual, expected, rtol=1e-5, atol=1e-6):
    """Compares a lazytrain tensor (or array) with numpy values."""
    a = actual.numpy() if isinstance(actual, lt.Tensor) else np.asarray(actual)
    np.testing.assert_allclose(a, np.asarray(expected), rtol=rtol, atol=atol)
