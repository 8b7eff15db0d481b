"""Renderers: results in, text or bytes out. No porting logic lives here."""
