"""Exporters: lower graphdsl graphs to other formats (``exporters.onnx``)."""
