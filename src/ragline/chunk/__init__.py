"""ragline.chunk"""
