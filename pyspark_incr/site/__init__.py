"""The static model site (``pyspark-incr docs build``): a page per model and the project's DAG, offline HTML.

The pages' DOM is a contract with the browser test (``tests/test_site_browser.py``):
every graph is ``<svg class="incr-graph" data-nodes="N" data-edges="M">`` that
``assets/site.js`` fills with ``N`` ``<g class="node" data-model="...">`` and ``M``
``<path class="edge">``; a coverage timeline is ``<svg class="incr-coverage">`` with
one ``<rect class="span">`` per span; column lineage is ``<section id="lineage">``.
"""
