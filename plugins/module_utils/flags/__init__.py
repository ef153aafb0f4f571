"""SGLang's launch flags: the flag model, their rendering, and the checks of the offline and on-host lint."""
