"""ragline.rerank"""
