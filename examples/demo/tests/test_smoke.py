"""A smoke tier: quick checks of the simulated device."""
import os


def test_tests_file_is_given():
    with open(os.environ["CRCR_TESTS_FILE"]) as f:
        assert f.read().strip()


def test_results_dir_is_writable():
    assert os.access(os.environ["CRCR_JUNIT_DIR"], os.W_OK)
