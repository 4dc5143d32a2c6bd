"""Capture a PyTorch model constructor into init IR (ir-spec/capture.md)."""
