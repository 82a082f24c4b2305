"""ragline.parse"""
