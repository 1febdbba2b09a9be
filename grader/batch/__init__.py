"""Batch: grade many submissions in workers, locally or on Dask."""
