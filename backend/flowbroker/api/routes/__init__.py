"""Route modules: every module here that defines ``router`` is included by the app factory."""
