"""The verbs of each part of the engine API, declared apart from the part's types (ENG-03, issue 32).

:class:`~shadowcode.engine.api.EngineApi` is made of these classes, so importing it builds no
request or result type; see :mod:`shadowcode.engine.api`.
"""
