"""ragline.cli"""
