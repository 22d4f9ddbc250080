"""robodyn.identification"""
