"""ragline.embed"""
