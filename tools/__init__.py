"""robodyn.tools"""
