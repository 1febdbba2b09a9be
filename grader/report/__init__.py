"""Report: result.json, HTML, terminal tables and the export formats."""
