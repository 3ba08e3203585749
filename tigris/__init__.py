"""TiGrIS: compile a trained ONNX model and a memory budget into a static .tgrs execution plan."""
__version__ = "0.1.0"
