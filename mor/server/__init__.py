"""`mor serve`: the Iceberg REST catalog protocol over HTTP, on top of mor's SQL catalog.

Any Iceberg client (pyiceberg's `RestCatalog`, Iceberg Java's `RESTCatalog`, DuckDB's iceberg
extension) talks to it; the tables it serves are the SQL catalog's, so mor itself
(`mor.load_catalog(warehouse)`) and pyiceberg's `SqlCatalog` see every change at once.

    app.py         the ASGI application: token gate, raw-path routing, bodies, responses
    routes.py      each REST operation as a function of the request's parts
    auth.py        bearer tokens and their grants (read-only, namespaces), the OAuth2 token endpoint
    errors.py      mor's errors as the spec's ErrorModel (status code and type)
    names.py       namespaces and table names in paths and bodies
    locations.py   what lies inside the warehouse (the only place the server writes), off its own files
    client_files.py  manifest lists and files a commit names: inside the table, readable
    namespaces.py  namespace operations
    tables.py      table operations: create, load, register, rename, drop
    commits.py     commits: requirements checked and updates applied on the current metadata,
                   the pointer swapped; several tables at once in one database transaction
    run.py         binding a socket and running uvicorn (`mor serve`)

Only this package imports Starlette and uvicorn (the `mor[server]` extra).
"""
