"""Files outside the database's rows: the registry of every place a person's words can lie (``registry``), the
data-directory lock (``dirlock``), uploads waiting to be imported, copies written outside (``outgoing``) and
consistent copies of the database (``backups``)."""
