X = $(X) sh
