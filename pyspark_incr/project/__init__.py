"""Where models come from (project directories, the catalog registry) and how they depend on each other."""
