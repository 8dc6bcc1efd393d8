"""Raw-data producers: the market simulator and real connectors, all writing the lake."""
